"""The login form: Django's, with the username bounded by the user model's own length.

Django's AuthenticationForm sets the field's max_length after building the field, which
only sizes the HTML input: a longer username still reached authenticate(), and django-axes
then failed (500) storing it in its 255-character column on PostgreSQL. A username no
account can have is refused by the form as invalid, before any authentication.
"""
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator


class LoginForm(AuthenticationForm):
    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        longest = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD).max_length
        self.fields["username"].validators.append(MaxLengthValidator(longest))
