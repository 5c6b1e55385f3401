"""A one-agent CrewAI crew whose model never gives a final answer, against JUKEBOX_BASE_URL: it keeps calling
the same tool with the same arguments, CrewAI keeps running it and asking again. Through jbx proxy the session's breaker trips and the crew stops with the proxy's
error. Prints one JSON document: the error the crew raised (or its result, if it finished)."""
import json
import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402


@tool("lookup_fact")
def lookup_fact(topic: str) -> str:
    """Look up a fact by topic."""
    return "no entry for " + topic


def main() -> None:
    llm = LLM(
        model="openai/gpt-4o-mini",
        base_url=os.environ["JUKEBOX_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sk-jukebox-test"),
        temperature=0,
    )
    thinker = Agent(
        role="Researcher",
        goal="Find the distance to the Moon",
        backstory="An astronomer who cannot make up their mind.",
        llm=llm,
        tools=[lookup_fact],
        allow_delegation=False,
        verbose=False,
        max_iter=8,
    )
    task = Task(description="Loop task: state the distance to the Moon.", expected_output="A distance.", agent=thinker)
    crew = Crew(agents=[thinker], tasks=[task], process=Process.sequential, verbose=False)
    try:
        result = crew.kickoff()
    except Exception as e:  # noqa: BLE001 - the crew's own error is what this program reports
        print(json.dumps({"error": type(e).__name__, "message": str(e)[:2000]}))
        return
    print(json.dumps({"result": result.raw}))


if __name__ == "__main__":
    main()
