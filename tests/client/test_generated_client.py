"""The generated-client test, run by scripts/client-test.sh.

Everything here goes through `aiden_client`, the package openapi-python-client generated from
`aiden openapi`: if the document lies about a body or an answer, the typed models below fail to
build or to parse. It defines a Secret, a graph Service and a Tool on it (its own: the fuzz run
before it may have rotated the seeded ones), a Process that calls the Tool, runs the Process,
reads the run's events (SSE) and the run, and checks a refusal parses as `Error`.
"""

import json
import os
import sys
import time
import uuid

from aiden_client import AuthenticatedClient
from aiden_client.api.processes import post_v1_processes, post_v1_processes_id_runs
from aiden_client.api.runs import get_v1_runs_id, get_v1_runs_id_events
from aiden_client.api.search import get_v1_search
from aiden_client.api.secrets import post_v1_secrets
from aiden_client.api.services import post_v1_services
from aiden_client.api.tools import get_v1_tools_id, post_v1_tools
from aiden_client.models import (
    Error,
    GraphQueryOperation,
    NewProcess,
    NewSecret,
    NewService,
    NewTool,
    Process,
    Protocol,
    RunStarted,
    RunStatus,
    RunView,
    SearchAnswer,
    Secret,
    SecretType,
    Service,
    ServiceType,
    StartRun,
    StartRunInputs,
    Step,
    StepInputs,
    StepOutput,
    Tool,
)


def check(condition, message):
    if not condition:
        print(f"client test: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def sse_events(text):
    """`event:`/`data:` blocks of a text/event-stream body, as (event, data) pairs."""
    events = []
    for block in text.split("\n\n"):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].strip())
        if name:
            events.append((name, json.loads("\n".join(data)) if data else None))
    return events


def main():
    client = AuthenticatedClient(
        base_url=os.environ["AIDEN_SERVER"],
        token=os.environ["AIDEN_ADMIN_TOKEN"],
        timeout=60.0,
        raise_on_unexpected_status=True,
    )
    suffix = uuid.uuid4().hex[:8]

    # The graph's password as a Secret: its value is never answered.
    password = os.environ["AIDEN_NEO4J_PASSWORD"]
    secret = post_v1_secrets.sync(
        client=client,
        body=NewSecret(name=f"Graph password {suffix}", type_=SecretType.PASSWORD, value=password),
    )
    check(isinstance(secret, Secret), f"create Secret answered {secret!r}")
    check(password not in json.dumps(secret.to_dict()), "the Secret's value came back")

    # The local Bolt server as a Service.
    service = post_v1_services.sync(
        client=client,
        body=NewService(
            name=f"Graph {suffix}",
            type_=ServiceType.NEO4J_GRAPH,
            protocol=Protocol.BOLT,
            requires_secret=True,
            endpoint=os.environ["AIDEN_NEO4J_URI"],
            connection_schema={
                "type": "object",
                "required": ["endpoint", "database"],
                "properties": {
                    "endpoint": {"type": "string"},
                    "database": {"type": "string"},
                    "user": {"type": "string"},
                },
            },
        ),
    )
    check(isinstance(service, Service), f"create Service answered {service!r}")

    # A Tool on it.
    new_tool = NewTool(
        id=f"client-echo-{suffix}",
        name=f"Echo through the graph {suffix}",
        service_id=service.id,
        secret_id=secret.id,
        connection_params={
            "endpoint": os.environ["AIDEN_NEO4J_URI"],
            "database": os.environ.get("AIDEN_NEO4J_DATABASE", "neo4j"),
            "user": os.environ.get("AIDEN_NEO4J_USER", "neo4j"),
        },
        operation=GraphQueryOperation(type_="graph_query", query="RETURN $text AS text"),
        input_schema={
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string"}},
        },
        output_schema={"type": "object", "required": ["rows"]},
    )
    created = post_v1_tools.sync_detailed(client=client, body=new_tool)
    check(created.status_code == 201, f"create Tool: {created.status_code} {created.content!r}")
    tool = created.parsed
    check(isinstance(tool, Tool), f"create Tool answered {tool!r}")
    check(tool.id == new_tool.id and tool.revision >= 1, f"the created Tool: {tool!r}")
    check(
        created.headers.get("location") == f"/v1/tools/{tool.id}",
        f"Location: {created.headers.get('location')}",
    )
    read = get_v1_tools_id.sync(id=tool.id, client=client)
    check(isinstance(read, Tool) and read.name == new_tool.name, f"read Tool: {read!r}")
    check(isinstance(read.operation, GraphQueryOperation), f"operation: {read.operation!r}")

    # A refusal parses as Error: the same id again is a conflict.
    again = post_v1_tools.sync_detailed(client=client, body=new_tool)
    check(again.status_code == 409, f"duplicate Tool: {again.status_code}")
    check(isinstance(again.parsed, Error), f"duplicate Tool answered {again.parsed!r}")
    check(again.parsed.error.code == "CONFLICT", f"code: {again.parsed.error.code}")

    # A Process of two steps: the second reads the first's output.
    process = post_v1_processes.sync(
        client=client,
        body=NewProcess(
            id=f"client-process-{suffix}",
            name=f"Echo twice {suffix}",
            initial_context=["text"],
            steps=[
                Step(
                    id="first",
                    tool=tool.id,
                    inputs=StepInputs.from_dict({"text": "{{text}}"}),
                    output=StepOutput(variable="first", required=True),
                ),
                Step(
                    id="second",
                    tool=tool.id,
                    depends_on=["first"],
                    inputs=StepInputs.from_dict({"text": "{{first.rows.[0].text}}!"}),
                    output=StepOutput(variable="second", required=True),
                ),
            ],
            output_template="{{second.rows.[0].text}}",
        ),
    )
    check(isinstance(process, Process), f"create Process answered {process!r}")
    check(process.version == 1, f"the created Process: {process!r}")

    started = post_v1_processes_id_runs.sync(
        id=process.id,
        client=client,
        body=StartRun(inputs=StartRunInputs.from_dict({"text": f"hello {suffix}"})),
    )
    check(isinstance(started, RunStarted), f"start run answered {started!r}")

    # The event stream ends after the run's terminal event.
    stream = get_v1_runs_id_events.sync(id=started.run_id, client=client)
    check(isinstance(stream, str), f"events answered {stream!r}")
    events = sse_events(stream)
    names = [name for name, _ in events]
    check(names and names[-1] == "run.completed", f"events: {events}")
    completed_steps = [d["stepId"] for n, d in events if n == "step.completed"]
    check(completed_steps == ["first", "second"], f"steps completed: {completed_steps} ({names})")

    run = None
    for _ in range(50):
        run = get_v1_runs_id.sync(id=started.run_id, client=client)
        if isinstance(run, RunView) and run.status == RunStatus.COMPLETED:
            break
        time.sleep(0.1)
    check(isinstance(run, RunView), f"read run answered {run!r}")
    check(run.status == RunStatus.COMPLETED, f"run status {run.status}")
    check(run.output == f"hello {suffix}!", f"run output {run.output!r}")
    check([s.step_id for s in run.steps] == ["first", "second"], f"steps {run.steps}")
    check(all(s.attempts == 1 and s.worker_id for s in run.steps), f"steps {run.steps}")

    # Search through the client: no embedder runs beside this server, so words
    # answer and the answer says why meaning did not.
    found = get_v1_search.sync(client=client, q=f"hello {suffix}", kinds="episode,entity", limit=5)
    check(isinstance(found, SearchAnswer), f"search answered {found!r}")
    check("text" in found.signals and "vector" not in found.signals, f"signals {found.signals}")
    check(isinstance(found.hits, list) and found.warning, f"search answer {found!r}")
    print(f"client test: ok (Tool {tool.id}, Process {process.id}, run {run.id}: {names})")


if __name__ == "__main__":
    main()
