"""A small ICU sepsis simulator: stabilise a septic patient with fluids, antibiotics and labs.

Written the way published clinical-simulation environments are written: a CamelCase class
ending in `Environment` (`IcuSepsisEnvironment`, env key `icusepsisenvironment`), tools that
document their parameters in Google-style `Args:`/`Returns:` docstring blocks with no `Field`
descriptions (`set_pump` documents them as un-headed `name: text` lines instead), parameters
in the author's (non-alphabetical) order, a parameter whose wire name is the Python keyword
`from`, and one whose name is a non-ASCII identifier (`名前`).

Serve it with `python -m examples.icu_sepsis [PORT]`.
"""

from __future__ import annotations

import sys
from typing import Literal

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, ConfigDict, Field

PATIENTS = [
    {"bed": i + 1, "lactate": round(2.5 + 0.5 * i, 1), "mean_arterial_pressure": 58 + i, "allergy": allergy}
    for i, allergy in enumerate(["none", "penicillin", "none", "vancomycin", "none", "none"])
]


class RegisterPatientParams(BaseModel):
    名前: str = Field(min_length=1)
    age: int = Field(ge=0, le=120)


class TransferParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    urgent: bool = False


class AdministerParams(BaseModel):
    drug: Literal["saline", "noradrenaline", "piperacillin", "meropenem"]
    dose: float = Field(gt=0)
    route: Literal["iv", "oral"] = "iv"


class OrderLabsParams(BaseModel):
    tests: list[Literal["lactate", "blood_culture", "creatinine"]] = Field(min_length=1)
    note: str | None = None


class SetPumpParams(BaseModel):
    pump_id: int = Field(ge=1, le=4)
    rate: float = Field(ge=0)


class EditParams(BaseModel):
    file_path: str
    old_string: str
    new_string: str


class IcuSepsisEnvironment(Environment):
    """One septic patient per task: restore the mean arterial pressure and treat the infection."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:
        super().__init__(task_spec, secrets)
        self.given: list[str] = []
        self.notes = {"notes/admission.md": "Patient admitted with suspected sepsis."}

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return PATIENTS

    def get_prompt(self):
        spec = self.task_spec
        return [
            TextBlock(
                text=f"Bed {spec['bed']}: lactate {spec['lactate']} mmol/L, "
                f"MAP {spec['mean_arterial_pressure']} mmHg, allergy: {spec['allergy']}."
            )
        ]

    @tool
    def register_patient(self, params: RegisterPatientParams) -> ToolOutput:
        """Register the patient under the name on their wristband.

        Args:
            名前: The patient's name, as written on the wristband.
            age: Age in whole years.

        Returns:
            The registration line of the chart.
        """
        return ToolOutput(blocks=[TextBlock(text=f"registered {params.名前} ({params.age})")])

    @tool
    def transfer(self, params: TransferParams) -> ToolOutput:
        """Move the patient between wards.

        Args:
            from: Ward the patient leaves.
            to: Ward the patient goes to.
            urgent: Skip the bed-management queue.

        Returns:
            The arguments the ward received, by wire name.
        """
        sent = params.model_dump(mode="json", by_alias=True, include=params.model_fields_set)
        return ToolOutput(blocks=[TextBlock(text=repr(sorted(sent.items())))])

    @tool
    def administer(self, params: AdministerParams) -> ToolOutput:
        """Give the patient one dose of a drug.

        Fluids and vasopressors raise the pressure; antibiotics treat the infection.

        Args:
            drug: What to give.
            dose: Amount in millilitres for fluids, else milligrams.
            route: How the drug is given.

        Returns:
            The patient's mean arterial pressure after the dose.
        """
        self.given.append(params.drug)
        pressure = self.task_spec["mean_arterial_pressure"] + 4 * len(self.given)
        return ToolOutput(blocks=[TextBlock(text=f"MAP {pressure} mmHg")])

    @tool
    def order_labs(self, params: OrderLabsParams) -> ToolOutput:
        """Order laboratory tests.

        Args:
            tests: The tests to run.
            note: Free-text note for the laboratory.

        Returns:
            The results, one per line.
        """
        values = {
            "lactate": f"{self.task_spec['lactate']} mmol/L",
            "blood_culture": "gram-negative rods",
            "creatinine": "1.4 mg/dL",
        }
        return ToolOutput(blocks=[TextBlock(text="\n".join(f"{t}: {values[t]}" for t in params.tests))])

    @tool
    def edit(self, params: EditParams) -> ToolOutput:
        """Replace text in one of the patient's chart notes.

        Args:
            file_path: Path of the note, relative to the chart.
            old_string: The exact text to replace.
            new_string: The text to put in its place.

        Returns:
            The note after the edit.
        """
        text = self.notes.get(params.file_path)
        if text is None or params.old_string not in text:
            return ToolOutput(blocks=[TextBlock(text=f"no such text in {params.file_path}")])
        self.notes[params.file_path] = text.replace(params.old_string, params.new_string, 1)
        return ToolOutput(blocks=[TextBlock(text=self.notes[params.file_path])])

    @tool
    def set_pump(self, params: SetPumpParams) -> ToolOutput:
        """Set the rate of one infusion pump.

        pump_id: Which pump, 1 to 4 (bed-side first).
        rate: Infusion rate in ml/h;
            0 stops the pump.

        Note: a pump keeps its rate until it is set again.
        """
        return ToolOutput(blocks=[TextBlock(text=f"pump {params.pump_id} at {params.rate} ml/h")])

    @tool
    def discharge(self) -> ToolOutput:
        """End the episode; scores 1 when fluids, a vasopressor and a safe antibiotic were given.

        Returns:
            The discharge summary.
        """
        safe = {"penicillin": {"meropenem"}}.get(self.task_spec["allergy"], {"piperacillin", "meropenem"})
        won = "saline" in self.given and "noradrenaline" in self.given and bool(safe & set(self.given))
        return ToolOutput(blocks=[TextBlock(text="stable" if won else "unstable")], reward=float(won), finished=True)


if __name__ == "__main__":
    from orlgen.serve import main

    main(["examples.icu_sepsis:IcuSepsisEnvironment", *sys.argv[1:]])
