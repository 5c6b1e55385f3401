"""An agent stuck in a loop, with the official openai package against JUKEBOX_BASE_URL: it keeps asking, the
model keeps giving the same non-answer. Through jbx proxy the session's breaker trips and the next request
fails with an API error. Prints one JSON document: how many calls were answered and the error it got."""
import json
import os

import openai
from openai import OpenAI


def main() -> None:
    client = OpenAI(base_url=os.environ["JUKEBOX_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sk-jukebox-test"))
    messages = [{"role": "user", "content": "Loop task: summarize the attached file."}]
    answered = 0
    try:
        for _ in range(10):
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            answered += 1
            messages.append({"role": "assistant", "content": r.choices[0].message.content})
            messages.append({"role": "user", "content": "Loop task: please try again."})
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        print(json.dumps({"answered": answered, "status": e.status_code, "error": type(e).__name__, "code": e.code, "body": body}))
        return
    print(json.dumps({"answered": answered, "status": None}))


if __name__ == "__main__":
    main()
