"""A schemathesis run against the served OpenAPI schema: every operation, with generated
valid and invalid input, authenticated with an operator's token and a real cache owner
behind the actions.

No input may produce a 500 anywhere in the API (a 502/503/504 with its JSON message is a
documented answer when a process behind the web is missing). The operations of this
module's routers (pods, nodes, cluster, events) must moreover answer exactly as the
schema the docs publish says: status codes, content types, JSON bodies, and valid input
accepted. (Negative input is not held to "rejected": schemathesis also counts values that
serialize to valid ones, an empty list sending nothing, as negative; tests/api/test_api_reads
and test_api_actions check that bad input is a 400.)

The schema is loaded inside the test (schemathesis' pytest fixture loader does not run
under pytest 9), and each operation gets its own Hypothesis run from its strategy.
"""
import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from tests.dashboard.web.api.apihelpers import pod_record

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

EXAMPLES = 20   # per operation and kind of input
CONFIG = {"checks": {"not_a_server_error": {
    "expected-statuses": ["2xx", "3xx", "4xx", "502", "503", "504"]}}}
STRICT_TAGS = {"pods", "nodes", "cluster", "events", "pending"}


def strict(operation) -> bool:
    return bool(STRICT_TAGS & set(operation.definition.raw.get("tags", ())))


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_input_makes_the_api_fail(owner, api_token, mode):
    pod_record("fuzzed", state="Assumed", node="node-b")
    headers = {"Authorization": f"Bearer {api_token}"}
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application(),
                                           config=SchemathesisConfig.from_dict(CONFIG),
                                           headers=headers)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert sum(map(strict, operations)) == 13
    for operation in operations:
        checks = None if strict(operation) else [not_a_server_error]
        excluded = [negative_data_rejection] if mode == GenerationMode.NEGATIVE else []
        if operation.definition.raw.get("operationId") in ("list_pods", "list_pending") or any(
                parameter.get("name") == "at"
                for parameter in operation.definition.raw.get("parameters", ())):
            # A page number past the last and a cursor the list did not make are 400s the
            # schema cannot express (both depend on the data), as is a moment `at` that the
            # history does not hold (a 400 past the latest, a 410 before the oldest kept);
            # everything else must pass.
            excluded.append(positive_data_acceptance)

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def call(case):
            case.call_and_validate(headers=headers, checks=checks, excluded_checks=excluded)

        call()
