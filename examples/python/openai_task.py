"""A two-step tool-using task with the official openai package, against JUKEBOX_BASE_URL (an OpenAI base URL).

Step 1 asks the model, which calls the lookup tool; step 2 sends the tool result back (streamed) and prints
the answer. Prints one JSON document: what a recorded run and its replay must agree on.
"""
import json
import os

from openai import OpenAI

FACTS = {"moon distance km": "384400"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_fact",
            "description": "Look up a fact by topic.",
            "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
        },
    }
]


def main() -> None:
    client = OpenAI(base_url=os.environ["JUKEBOX_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sk-jukebox-test"))
    messages = [{"role": "user", "content": "How far away is the Moon? Use the lookup tool."}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    topic = json.loads(call.function.arguments)["topic"]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": FACTS.get(topic, "unknown")})
    pieces = []
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    print(json.dumps({"tool": call.function.name, "topic": topic, "chunks": len(pieces), "answer": "".join(pieces)}))


if __name__ == "__main__":
    main()
