"""A path under the API that no operation serves: 404 in the API's JSON (to a caller it
would answer; others get its 401), never Django's HTML page. Mounted after every router."""
from ninja import Router

from dashboard.api.errors import ApiError

router = Router()


@router.api_operation(["GET", "POST", "PUT", "PATCH", "DELETE"], "/{path:rest}",
                      include_in_schema=False)
def unknown(request, rest: str):
    raise ApiError(404, f"no API endpoint {request.path[:200]} (see /api/v1/docs)")
