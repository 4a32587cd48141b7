"""An independent client: the official ACP Python SDK (agent-client-protocol 0.12.1) drives candor.

It plays an editor that offers fs and terminals: it answers the permission request (allow once),
serves fs/read_text_file from an unsaved "buffer" of its own, runs terminal/* commands as real
processes, and checks what it saw. It prints a JSON summary on stdout and exits non-zero if a
check fails. The SDK validates every message it receives with pydantic; any validation problem it
logs on stderr makes the Rust test that runs this script fail too.

Usage: python_sdk_client.py <candor binary> <project dir>
"""

import asyncio
import json
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)


class Terminal:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.output = b""
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(4096):
            self.output += chunk

    async def wait(self) -> int:
        code = await self.proc.wait()
        await self.reader
        return code


class Editor(Client):
    def __init__(self, buffers: dict[str, str]) -> None:
        self.buffers = buffers
        self.calls: list[str] = []
        self.permission: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.terminals: dict[str, Terminal] = {}

    async def request_permission(self, session_id, tool_call, options, **kw):
        self.calls.append("session/request_permission")
        self.permission.append(tool_call.model_dump(by_alias=True, exclude_none=True))
        allow = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def read_text_file(self, session_id, path, line=None, limit=None, **kw):
        self.calls.append("fs/read_text_file")
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            with open(path, encoding="utf-8") as f:
                return ReadTextFileResponse(content=f.read())
        except FileNotFoundError:
            raise RequestError.resource_not_found(path)

    async def write_text_file(self, session_id, path, content, **kw):
        self.calls.append("fs/write_text_file")
        self.buffers[path] = content
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        return WriteTextFileResponse()

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kw):
        self.calls.append("terminal/create")
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = Terminal(proc)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kw):
        self.calls.append("terminal/wait_for_exit")
        code = await self.terminals[terminal_id].wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id, terminal_id, **kw):
        self.calls.append("terminal/output")
        t = self.terminals[terminal_id]
        status = TerminalExitStatus(exit_code=t.proc.returncode) if t.proc.returncode is not None else None
        return TerminalOutputResponse(output=t.output.decode(), truncated=False, exit_status=status)

    async def kill_terminal(self, session_id, terminal_id, **kw):
        self.calls.append("terminal/kill")
        self.terminals[terminal_id].proc.kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kw):
        self.calls.append("terminal/release")
        t = self.terminals.pop(terminal_id)
        if t.proc.returncode is None:
            t.proc.kill()
        return ReleaseTerminalResponse()

    async def ext_method(self, method, params):
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method, params):
        pass

    async def session_update(self, session_id, update, **kw: Any) -> None:
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))


async def main(candor: str, project: str) -> int:
    notes = os.path.join(project, "notes.txt")
    editor = Editor({notes: "unsaved buffer text\n"})
    async with spawn_agent_process(editor, candor, env=dict(os.environ), cwd=project) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
            ),
            client_info=Implementation(name="python-sdk-check", version="0.12.1"),
        )
        session = await conn.new_session(cwd=project, mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("read the notes, then run the greeting")])

    cards: dict[str, dict[str, Any]] = {}
    for u in editor.updates:
        if u.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            cards.setdefault(u["toolCallId"], {}).update(u)
    text = "".join(u["content"].get("text", "") for u in editor.updates if u.get("sessionUpdate") == "agent_message_chunk")
    summary = {
        "protocolVersion": init.protocol_version,
        "stopReason": response.stop_reason,
        "calls": editor.calls,
        "permission": editor.permission,
        "cards": cards,
        "text": text,
    }
    print(json.dumps(summary))
    checks = [
        (init.protocol_version == 1, "protocol version 1"),
        (response.stop_reason == "end_turn", f"stop reason {response.stop_reason}"),
        ("fs/read_text_file" in editor.calls, "the Read went through fs/read_text_file"),
        ("unsaved buffer text" in json.dumps(cards.get("read", {})), "the Read card shows the unsaved buffer"),
        (editor.calls.count("session/request_permission") == 1, "one permission request"),
        (editor.permission and editor.permission[0].get("rawInput", {}).get("command") == "echo hello from the terminal",
         "the permission request shows the command"),
        (editor.calls[-4:] == ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
         or editor.calls[-4:] == ["terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/release"],
         f"the terminal life cycle: {editor.calls}"),
        (cards.get("run", {}).get("status") == "completed", "the command's card completed"),
        (any(c.get("type") == "terminal" for c in cards.get("run", {}).get("content", [])), "the command's card shows the terminal"),
        (not editor.terminals, "every terminal was released"),
    ]
    failed = [name for ok, name in checks if not ok]
    for name in failed:
        print(f"CHECK FAILED: {name}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
