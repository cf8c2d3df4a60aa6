"""Bodies over SCHEDVIEW_MAX_BODY are a 413 that says so, JSON on the API and a page
elsewhere, before anything reads them; nothing is done."""
import pytest
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory

from dashboard.models import AuditAction
from dashboard.web.middleware.body_limit import bad_request

pytestmark = pytest.mark.django_db

LIMIT = 2_621_440


@pytest.fixture
def tool(api_token):
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")


def test_the_limit_is_the_settings(settings):
    assert settings.SCHEDVIEW_MAX_BODY == settings.DATA_UPLOAD_MAX_MEMORY_SIZE == LIMIT


def test_an_api_body_over_the_limit_is_a_413_in_json(tool):
    body = b'{"uid": "' + b"x" * LIMIT + b'", "node": "n1"}'
    response = tool.post("/api/v1/pods/assume", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"error": "the request body is over the limit of 2,621,440 bytes"}
    assert not AuditAction.objects.exists()


def test_a_body_at_the_limit_is_read(tool):
    body = b'{"uid": "' + b"x" * (LIMIT - 100) + b'", "node": "n1"}'
    assert len(body) <= LIMIT
    response = tool.post("/api/v1/pods/assume", body, content_type="application/json")
    assert response.status_code == 400 and "uid" in response.json()["error"]


def test_a_page_form_over_the_limit_is_a_413_page(operator_client):
    response = operator_client.post("/pods/uid-x/forget/", {"confirm": "yes", "pad": "x" * LIMIT})
    assert response.status_code == 413
    assert "over the limit of 2,621,440 bytes" in response.content.decode()
    assert response["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_an_uploaded_file_counts_too(operator_client):
    """Django's own limit leaves multipart files out: the declared length catches them."""
    upload = SimpleUploadedFile("big.bin", b"\0" * LIMIT)
    response = operator_client.post("/pods/uid-x/forget/", {"confirm": "yes", "file": upload})
    assert response.status_code == 413


def test_an_anonymous_oversized_body_is_refused_without_reading_it(client):
    response = client.post("/api/v1/pods/assume", b"{" * (LIMIT + 1),
                           content_type="application/json")
    assert response.status_code == 413


def test_a_body_found_too_big_once_read_is_a_413_page_too():
    """Chunked bodies carry no length: Django raises when it reads them (handler400)."""
    response = bad_request(RequestFactory().get("/"), RequestDataTooBig("big"))
    assert response.status_code == 413


def test_too_many_query_parameters_are_a_400_on_the_api(tool):
    query = "&".join(f"p{i}=1" for i in range(1500))
    response = tool.get(f"/api/v1/pods?{query}")
    assert response.status_code == 400
    assert response.json()["error"]
