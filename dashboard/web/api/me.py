"""Who the API thinks is calling: lets a tool check its token before it acts."""
from ninja import Router, Schema

from dashboard.models import ACT_PERMISSION
from dashboard.web.api.schemas import AUTH_ERRORS

router = Router(tags=["auth"])


class Me(Schema):
    username: str
    can_act: bool


@router.get("", response={200: Me, **AUTH_ERRORS}, summary="The caller's user and whether it may act on pods")
def me(request):
    return Me(username=request.user.get_username(), can_act=request.user.has_perm(ACT_PERMISSION))
