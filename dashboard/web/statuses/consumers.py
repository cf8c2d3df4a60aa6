"""The statuses page, live: its rows are pushed again when the extender's statuses moved.

Statuses change on kube-scheduler's calls (a pod starts waiting, its reasons
change) as well as on cache events, so the consumer does not look at the events:
every owner flush carries the statuses' version (`extender_statuses` in its
status), and a flush with a new version redraws the browser's page of the list.
"""
from django.template.loader import render_to_string

from . import status_reads
from .views import TEMPLATE, list_context
from dashboard.web.live.consumers import BAD_INPUT, LiveConsumer, _query
from dashboard.wire.commands import CommandError


class StatusesConsumer(LiveConsumer):
    async def connect(self):
        query = _query(self.scope)
        self.state, self.page = query.get("state", ""), query.get("page", "1")
        try:
            status_reads.check_state(self.state)
            status_reads.check_page(self.page)
        except status_reads.BadStatusQuery:
            await self.close(code=BAD_INPUT)
            return
        self._version = None
        await super().connect()

    def shared_key(self):
        return ("statuses", self.state, self.page)

    def wants(self, message: dict) -> bool:
        version = (message.get("status") or {}).get("extender_statuses")
        moved, self._version = version != self._version, version
        return moved

    def render(self) -> str:
        context = {"error": ""}
        try:
            context.update(list_context(self.state, self.page))
        except CommandError as exc:
            context["error"] = exc.message
        return render_to_string(f"{TEMPLATE}#status-rows", context)
