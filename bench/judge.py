"""The M3-Bench judge: the paper's prompt, sent through the ``[llm]`` endpoint.

M3-Agent scores an answer with GPT-4o (``gpt-4o-2024-11-20``, temperature 0) and this prompt, and
counts it correct when the reply contains "yes" anywhere. This judge is strict (``read_reply``): the
reply's first word, after leading whitespace, punctuation and markdown (``**Yes**``, ``"No."``,
``` `yes` ```), must be yes or no, in any case; "Yes, it follows" is yes, while "I think yes",
"Yesterday" or "The answer: yes" say neither. A reply that says neither is counted as unclear and
scored incorrect. For a judge that does as the prompt asks ("Only return Yes or No") the two rules
agree. Another judge model gives figures that are not comparable with the paper's; the runner says
so.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from llm.client import ChatClient, LLMError

log = logging.getLogger(__name__)

PAPER_MODEL = "gpt-4o-2024-11-20"

PROMPT = (
    "You are provided with a question, a ground truth answer, and an answer from an agent model. Your task is to "
    "determine whether the ground truth answer can be logically inferred from the agent's answer, in the context of "
    "the question. Do not directly compare the surface forms of the agent answer and the ground truth answer. "
    "Instead, assess whether the meaning expressed by the agent answer supports or implies the ground truth answer. "
    'If the ground truth can be reasonably derived from the agent answer, return "Yes". If it cannot, return '
    '"No". Only return "Yes" or "No", with no additional explanation. question: {question} '
    "ground_truth_answer: {ground_truth_answer} agent_answer: {agent_answer} Output ('Yes' or 'No'):"
)


@dataclass(frozen=True)
class Verdict:
    correct: bool | None  # None: the judge could not be asked (the endpoint failed)
    reply: str
    unclear: bool = (
        False  # the reply did not open with yes or no (``read_reply``): scored incorrect
    )


class Judge:
    def __init__(self, client: ChatClient) -> None:
        self.client = client

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def is_paper_model(self) -> bool:
        return self.model == PAPER_MODEL

    def judge(self, question: str, gold: str, answer: str) -> Verdict:
        prompt = PROMPT.format(question=question, ground_truth_answer=gold, agent_answer=answer)
        try:
            # the verdict is the first word: a judge that goes on is cut off, not waited for
            reply = self.client.chat(
                [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=16
            )
        except LLMError as e:
            log.warning("judge: %s", e)
            return Verdict(None, str(e))
        said = read_reply(reply or "")
        return Verdict(said is True, reply, unclear=said is None)


_FIRST_WORD = re.compile(
    r"[\W_]*([^\W_]+)"
)  # skips whitespace, punctuation and markdown (*, _, `, #, >)


def read_reply(reply: str) -> bool | None:
    """True for a reply whose first word is "yes", False for "no" (any case, after leading
    whitespace, punctuation and markdown); None for anything else (unclear)."""
    m = _FIRST_WORD.match(reply)
    word = m.group(1).lower() if m else ""
    return True if word == "yes" else False if word == "no" else None
