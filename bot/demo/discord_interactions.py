"""Application commands and interactions in the stand-in: registering slash commands, and
answering an interaction (its callback, then its webhook: follow-ups, ``@original``).

Discord's rules for answers, as the bot meets them: an interaction is acknowledged once (40060
after that); an ephemeral message never reaches the channel (kept on the interaction, where a
test reads it); a deferred response shows a loading message, and the first follow-up sent while
it still loads resolves it (the same message, as ephemeral as the deferral, whatever the
follow-up's flags say), the next ones are new messages.
"""

from __future__ import annotations

from aiohttp import web

from bot.demo.discord_files import Upload
from bot.demo.discord_rest import BODY, FILES, RestApi, json_response, no_content
from bot.demo.discord_state import (
    MESSAGE_FLAG_EPHEMERAL,
    MESSAGE_FLAG_LOADING,
    ApiError,
    InteractionRecord,
    Payload,
    unknown_message,
)

CALLBACK_MESSAGE, CALLBACK_DEFERRED_MESSAGE = 4, 5
MESSAGE_TYPE_CHAT_INPUT_COMMAND = 20


class InteractionApi:
    """The routes of application commands, interaction callbacks and interaction webhooks."""

    def __init__(self, rest: RestApi) -> None:
        self.rest = rest
        self.state = rest.state
        self.gateway = rest.gateway

    def add_routes(self, router: web.UrlDispatcher) -> None:
        get, post, put = router.add_get, router.add_post, router.add_put
        patch, delete = router.add_patch, router.add_delete
        for prefix in ("/applications/{app_id}", "/applications/{app_id}/guilds/{guild_id}"):
            get(prefix + "/commands/permissions", self.command_permissions)
            get(prefix + "/commands", self.list_commands)
            put(prefix + "/commands", self.overwrite_commands)
            post(prefix + "/commands", self.create_command)
            get(prefix + "/commands/{command_id}", self.get_command)
            patch(prefix + "/commands/{command_id}", self.edit_command)
            delete(prefix + "/commands/{command_id}", self.delete_command)
        post("/interactions/{interaction_id}/{token}/callback", self.interaction_callback)
        post("/webhooks/{app_id}/{token}", self.followup)
        get("/webhooks/{app_id}/{token}/messages/{message_id}", self.get_webhook_message)
        patch("/webhooks/{app_id}/{token}/messages/{message_id}", self.edit_webhook_message)
        delete("/webhooks/{app_id}/{token}/messages/{message_id}", self.delete_webhook_message)

    # ------------------------------------------------------------------ application commands

    def _command_scope(self, request: web.Request) -> str | None:
        if request.match_info["app_id"] != self.state.application_id:
            raise ApiError(403, 50001, "Missing Access")
        return request.match_info.get("guild_id")

    def _command(self, request: web.Request) -> Payload:
        commands = self.state.commands(self._command_scope(request))
        command = commands.get(request.match_info["command_id"])
        if command is None:
            raise ApiError(404, 10063, "Unknown application command")
        return command

    async def list_commands(self, request: web.Request) -> web.Response:
        return json_response(list(self.state.commands(self._command_scope(request)).values()))

    async def overwrite_commands(self, request: web.Request) -> web.Response:
        scope = self._command_scope(request)
        return json_response(self.state.overwrite_commands(scope, request[BODY] or []))

    async def create_command(self, request: web.Request) -> web.Response:
        command, created = self.state.upsert_command(
            self._command_scope(request), request[BODY] or {}
        )
        return json_response(command, status=201 if created else 200)

    async def get_command(self, request: web.Request) -> web.Response:
        return json_response(self._command(request))

    async def edit_command(self, request: web.Request) -> web.Response:
        command = self._command(request)
        command.update({k: v for k, v in (request[BODY] or {}).items() if k != "id"})
        return json_response(command)

    async def delete_command(self, request: web.Request) -> web.Response:
        command = self._command(request)
        del self.state.commands(self._command_scope(request))[command["id"]]
        return no_content()

    async def command_permissions(self, request: web.Request) -> web.Response:
        self._command_scope(request)
        return json_response([])

    # ------------------------------------------------------------------ interactions

    def _interaction(self, interaction_id: str | None, token: str) -> InteractionRecord:
        for record in self.state.interactions.values():
            if record.token == token and interaction_id in (None, record.id):
                return record
        if interaction_id is None:
            raise ApiError(404, 10015, "Unknown Webhook")
        raise ApiError(404, 10062, "Unknown interaction")

    async def _post(
        self,
        record: InteractionRecord,
        body: Payload,
        uploads: tuple[Upload, ...] = (),
        *,
        extra: Payload,
    ) -> Payload:
        """A new message answering the interaction; an ephemeral one is kept on the interaction
        only, a public one is stored and dispatched."""
        channel_id = record.payload["channel_id"]
        flags = int(body.get("flags") or 0) | int(extra.get("flags", 0))
        app = self.state.application_id
        meta = {"webhook_id": app, "application_id": app, "flags": flags} | {
            k: v for k, v in extra.items() if k != "flags"
        }
        if flags & MESSAGE_FLAG_EPHEMERAL:
            message = self.rest.bot_message(channel_id, body, uploads, extra=meta, stored=False)
            record.ephemeral_messages.append(message)
            return message
        message = self.rest.bot_message(channel_id, body, uploads, extra=meta)
        await self.gateway.dispatch_message("MESSAGE_CREATE", message)
        return message

    async def interaction_callback(self, request: web.Request) -> web.Response:
        record = self._interaction(
            request.match_info["interaction_id"], request.match_info["token"]
        )
        if record.callbacks:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        body = request[BODY] or {}
        record.callbacks.append(body)
        callback_type = body.get("type")
        data = body.get("data") or {}
        if callback_type in (CALLBACK_MESSAGE, CALLBACK_DEFERRED_MESSAGE):
            command = record.payload.get("data", {})
            extra: Payload = {
                "type": MESSAGE_TYPE_CHAT_INPUT_COMMAND,
                "interaction": {
                    "id": record.id,
                    "type": record.payload["type"],
                    "name": command.get("name", ""),
                    "user": record.payload.get("member", {}).get("user")
                    or record.payload.get("user"),
                },
            }
            uploads: tuple[Upload, ...] = request[FILES]
            if callback_type == CALLBACK_DEFERRED_MESSAGE:
                extra["flags"] = MESSAGE_FLAG_LOADING
                data = {"content": "", "flags": data.get("flags", 0)}
                uploads = ()
            message = await self._post(record, data, uploads, extra=extra)
            record.original_message_id = message["id"]
        return no_content()

    async def followup(self, request: web.Request) -> web.Response:
        record = self._interaction(None, request.match_info["token"])
        body, uploads = request[BODY] or {}, request[FILES]
        loading = self._loading_original(record)
        if loading is not None:
            # Discord takes the first follow-up to a deferral still loading as its answer.
            message = await self._edit(record, loading, body, uploads)
        else:
            message = await self._post(record, body, uploads, extra={})
        record.followup_message_ids.append(message["id"])
        if request.query.get("wait", "false").lower() in {"1", "true"}:
            return json_response(message)
        return no_content()

    def _loading_original(self, record: InteractionRecord) -> str | None:
        message_id = record.original_message_id
        if message_id is None:
            return None
        message = self.find(record, message_id)
        return message_id if message and message["flags"] & MESSAGE_FLAG_LOADING else None

    def find(self, record: InteractionRecord, message_id: str | None) -> Payload | None:
        """An interaction's message as it is now (None: deleted, or never sent)."""
        if message_id is None:
            return None
        for message in record.ephemeral_messages:
            if message["id"] == message_id:
                return message
        channel_id = self.state.message_channel.get(int(message_id))
        if channel_id is None:
            return None
        return self.state.render(self.state.raw_message(channel_id, message_id))

    async def _edit(
        self,
        record: InteractionRecord,
        message_id: str,
        body: Payload,
        uploads: tuple[Upload, ...] = (),
    ) -> Payload:
        for index, message in enumerate(record.ephemeral_messages):
            if message["id"] == message_id:
                changes = self.rest.edit_changes(message, body, uploads)
                edited = self.state.render(
                    message | changes | {"edited_timestamp": self.state.now_iso()}
                )
                # Still ephemeral: the flag cannot be taken back.
                edited["flags"] |= MESSAGE_FLAG_EPHEMERAL
                record.ephemeral_messages[index] = edited
                return edited
        channel_id = self.state.message_channel.get(int(message_id)) if message_id else None
        if channel_id is None:
            raise unknown_message()
        raw = self.state.raw_message(channel_id, message_id)
        changes = self.rest.edit_changes(raw, body, uploads)
        message = self.state.edit_message(channel_id, message_id, changes)
        await self.gateway.dispatch_message("MESSAGE_UPDATE", message)
        return message

    def _webhook_message_id(self, request: web.Request) -> tuple[InteractionRecord, str]:
        record = self._interaction(None, request.match_info["token"])
        message_id = request.match_info["message_id"]
        if message_id == "@original":
            message_id = record.original_message_id or ""
        if not message_id.isdigit() or self.find(record, message_id) is None:
            raise unknown_message()
        return record, message_id

    async def get_webhook_message(self, request: web.Request) -> web.Response:
        record, message_id = self._webhook_message_id(request)
        return json_response(self.find(record, message_id))

    async def edit_webhook_message(self, request: web.Request) -> web.Response:
        record, message_id = self._webhook_message_id(request)
        edited = await self._edit(record, message_id, request[BODY] or {}, request[FILES])
        return json_response(edited)

    async def delete_webhook_message(self, request: web.Request) -> web.Response:
        record, message_id = self._webhook_message_id(request)
        before = len(record.ephemeral_messages)
        record.ephemeral_messages = [m for m in record.ephemeral_messages if m["id"] != message_id]
        if len(record.ephemeral_messages) == before:
            channel_id = self.state.message_channel[int(message_id)]
            event = self.state.delete_message(channel_id, message_id)
            await self.gateway.dispatch_message("MESSAGE_DELETE", event)
        return no_content()
