"""A quiz graded on the model's final answer: the ORS `@terminal` pattern.

The model may look a topic up in the quiz's notes (an ordinary tool, no reward), then answers in
a plain message. The environment's terminal tool `submit` receives that message and grades it:
1.0 when it contains the expected answer, else 0.0. The harness, not the model, calls `submit`:
it is hidden from the model's tool list.
"""

from openreward.environments import Environment, TextBlock, ToolOutput, terminal, tool
from pydantic import BaseModel

QUESTIONS = [
    {"question": "What is the capital of France?", "answer": "paris", "topic": "geography"},
    {"question": "How many legs does a spider have?", "answer": "8", "topic": "biology"},
    {"question": "Which gas do plants take in for photosynthesis?", "answer": "carbon dioxide", "topic": "biology"},
    {"question": "What is 7 times 6?", "answer": "42", "topic": "arithmetic"},
]

NOTES = {
    "geography": "France's capital and largest city is Paris.",
    "biology": "Spiders are arachnids with eight legs; plants take in carbon dioxide and release oxygen.",
    "arithmetic": "7 x 6 = 42.",
}


class LookupParams(BaseModel):
    topic: str
    max_chars: int = 200


class SubmitParams(BaseModel):
    answer: str


class Quiz(Environment):
    """Answer one quiz question; the final message is graded."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return list(QUESTIONS)

    def get_prompt(self):
        return [TextBlock(text=f"{self.task_spec['question']} Answer in one short message.")]

    @tool
    def lookup(self, params: LookupParams) -> ToolOutput:
        """Read the quiz's notes on a topic.

        Args:
            topic: One of geography, biology or arithmetic.
            max_chars: Cut the notes to at most this many characters.

        Returns:
            The notes, or a list of the known topics.
        """
        notes = NOTES.get(params.topic.lower())
        text = notes[: params.max_chars] if notes else f"Unknown topic; try one of {sorted(NOTES)}."
        return ToolOutput(blocks=[TextBlock(text=text)])

    @terminal
    @tool
    def submit(self, params: SubmitParams) -> ToolOutput:
        """Grade the final answer.

        Args:
            answer: The model's final message.
        """
        correct = self.task_spec["answer"] in params.answer.lower()
        return ToolOutput(
            blocks=[TextBlock(text="correct" if correct else "incorrect")],
            reward=1.0 if correct else 0.0,
            finished=True,
        )
