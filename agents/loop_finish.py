"""How an agent run completes: completion rules, output checks and repair, the finalizer.

A mixin of agents.loop._Loop (the state it reads is set up there).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonschema

from agents.gateway import ChatResult
from agents.loop_types import REPLY_DATA_FIELDS, RUNTIME_DONE, AgentRun

logger = logging.getLogger("covel.agents")


class Completion:
    def completion_missing(self) -> str | None:
        """What the run still lacks before a prose reply can complete it, or None."""
        if self.config.finish_with:
            return f"call {self.config.finish_with} to finish"
        if self.config.completion_require == "explicit":
            tools = ", ".join(self.config.after_tools) or RUNTIME_DONE
            return f"finish explicitly by calling {tools}"
        if self.config.completion_require == "tool-use":
            if self.config.after_tools:
                return f"call one of {', '.join(self.config.after_tools)} successfully"
            return None if self.any_business_success else "call a tool successfully"
        return None

    def handle_prose(self, result: ChatResult) -> AgentRun | None:
        missing = self.completion_missing()
        if missing:
            if self.budgets["toolUse"] > 0 and not self.tools_off:
                self.budgets["toolUse"] -= 1
                self.messages.append({"role": "assistant", "content": result.content or ""})
                self.messages.append(
                    {"role": "user", "content": f"You have not finished: {missing}."}
                )
                return None
            return self.run.fail(
                "completion-missing", f"the run ended without completing: {missing}"
            )
        return self.finish_with_text(result.content)

    def finish_with_text(self, text: str | None, *, repair: bool = True) -> AgentRun | None:
        text = text or ""
        if not self.output_schema:
            return self.run.succeed(self.strip_data_fields(text), text)
        try:
            value = json.loads(text)
            value = self.strip_data_fields(value)
            jsonschema.validate(value, self.output_schema)
            return self.run.succeed(value, text)
        except (ValueError, jsonschema.ValidationError) as exc:
            problem = exc.message if isinstance(exc, jsonschema.ValidationError) else "not JSON"
            if repair and self.budgets["outputRepair"] > 0:
                self.budgets["outputRepair"] -= 1
                self.tools_off = True
                self.messages.append({"role": "assistant", "content": text})
                self.messages.append(
                    {
                        "role": "user",
                        "content": f"Your answer does not match the output schema ({problem}). Reply with JSON only.",
                    }
                )
                return None
            return self.run.fail(
                "output-invalid", f"the output does not match io.output.schema: {problem}"
            )

    def strip_data_fields(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        dropped = [k for k in REPLY_DATA_FIELDS if k in value]
        events = value.get("events")
        if isinstance(events, list) and any(isinstance(e, dict) and "topic" in e for e in events):
            dropped.append("events")
        if dropped:
            self.run.warnings.append(
                f"reply data fields have no effect and were removed: {', '.join(dropped)}"
            )
            logger.warning(
                "agent reply carried data fields %s; a model writes only through tools", dropped
            )
            value = {k: v for k, v in value.items() if k not in dropped}
        return value

    def finalize(self, code: str, message: str) -> AgentRun:
        """At the step limit (or the deadline reserve), ask once for the answer with tools off."""
        if not self.config.finalizer_max_steps or self.completion_missing():
            return self.run.fail(code, message)
        result = self.ask(tools_off=True)
        done = self.finish_with_text(result.content)
        # An answer that fails its own check (output-invalid) says more than the step limit.
        return done if done is not None else self.run.fail(code, message)
