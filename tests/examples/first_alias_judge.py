"""Adding a judge: one file, one registration (CONTRIBUTING.md shows this file)."""

from collections.abc import Sequence

from semuq_eval import judges
from semuq_eval.judges import normalize


@judges.register("first_alias")
class FirstAliasJudge:
    """Correct when the normalized answer contains the question's FIRST reference alias; no reference: None."""

    name = "first_alias"

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[bool | None]:
        # one call for every answer of every question of a run: batch the model calls of an LLM judge here
        return [
            normalize(refs[0]) in normalize(answer) if refs else None
            for answer, refs in zip(answers, references, strict=True)
        ]

    @property
    def info(self) -> dict:
        return {"judge": self.name}  # written into every breakdown
