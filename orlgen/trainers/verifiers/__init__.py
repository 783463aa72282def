"""The verifiers 0.4 trainer: not built yet (helper `verifiers` replaces this stub)."""

from __future__ import annotations

from orlgen.trainers import UnknownTrainer

raise UnknownTrainer("trainer 'verifiers' is not built yet in this orlgen")
