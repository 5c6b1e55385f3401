"""An AutoGen (autogen-agentchat) assistant with a tool: the model calls the tool, AutoGen runs it, then the
model reflects on the result. Against JUKEBOX_BASE_URL; prints one JSON document of the conversation."""
import asyncio
import json
import os

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient


async def lookup_fact(topic: str) -> str:
    """Look up a fact by topic."""
    return {"moon distance km": "384400"}.get(topic, "unknown")


async def main() -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini",
        base_url=os.environ["JUKEBOX_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sk-jukebox-test"),
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )
    agent = AssistantAgent(
        "assistant",
        model_client=client,
        tools=[lookup_fact],
        reflect_on_tool_use=True,
        system_message="You answer with facts you looked up.",
    )
    result = await agent.run(task="How far away is the Moon? Look it up.")
    await client.close()
    messages = [{"type": m.type, "content": m.content if isinstance(m.content, str) else str(m.content)} for m in result.messages]
    print(json.dumps({"messages": messages, "answer": result.messages[-1].content}))


if __name__ == "__main__":
    asyncio.run(main())
