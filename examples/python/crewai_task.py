"""A two-agent, two-task CrewAI crew (researcher, then writer using the researcher's output) against
JUKEBOX_BASE_URL. Prints one JSON document with each task's output and the crew's final result."""
import json
import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402


def main() -> None:
    llm = LLM(
        model="openai/gpt-4o-mini",
        base_url=os.environ["JUKEBOX_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sk-jukebox-test"),
        temperature=0,
    )
    researcher = Agent(
        role="Researcher",
        goal="Find facts about the Moon",
        backstory="A careful astronomer.",
        llm=llm,
        allow_delegation=False,
        verbose=False,
    )
    writer = Agent(
        role="Writer",
        goal="Write one clear sentence",
        backstory="A science journalist.",
        llm=llm,
        allow_delegation=False,
        verbose=False,
    )
    research = Task(
        description="Research task: state the distance from the Earth to the Moon.",
        expected_output="The distance in kilometres.",
        agent=researcher,
    )
    write = Task(
        description="Writing task: turn the research into one sentence for a child.",
        expected_output="One sentence.",
        agent=writer,
        context=[research],
    )
    crew = Crew(agents=[researcher, writer], tasks=[research, write], process=Process.sequential, verbose=False)
    result = crew.kickoff()
    print(json.dumps({"tasks": [t.raw for t in result.tasks_output], "result": result.raw}))


if __name__ == "__main__":
    main()
