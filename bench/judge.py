"""The M3-Bench judge: the paper's prompt, sent through the ``[llm]`` endpoint.

M3-Agent scores an answer with GPT-4o (``gpt-4o-2024-11-20``, temperature 0) and this prompt, and
counts it correct when the reply contains "yes". Another judge model gives figures that are not
comparable with the paper's; the runner says so.
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
    "If the ground truth can be reasonably derived from the agent answer, return \"Yes\". If it cannot, return "
    "\"No\". Only return \"Yes\" or \"No\", with no additional explanation. question: {question} "
    "ground_truth_answer: {ground_truth_answer} agent_answer: {agent_answer} Output ('Yes' or 'No'):"
)


@dataclass(frozen=True)
class Verdict:
    correct: bool | None  # None: the judge could not be asked (the endpoint failed)
    reply: str
    unclear: bool = False  # the reply said neither yes nor no (scored "no", as upstream does)


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
            reply = self.client.chat([{"role": "user", "content": prompt}], temperature=0.0)
        except LLMError as e:
            log.warning("judge: %s", e)
            return Verdict(None, str(e))
        said = (reply or "").lower()
        # the paper's rule: correct when the reply contains "yes"; a reply with neither word is
        # scored "no" as upstream does, and counted as unclear
        return Verdict("yes" in said, reply, unclear=re.search(r"\b(yes|no)\b", said) is None)
