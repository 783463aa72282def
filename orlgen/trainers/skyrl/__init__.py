"""The skyrl-gym 0.4 trainer: not built yet (helper `skyrl` replaces this stub)."""

from __future__ import annotations

from orlgen.trainers import UnknownTrainer

raise UnknownTrainer("trainer 'skyrl' is not built yet in this orlgen")
