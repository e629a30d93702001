"""What to do when thinking goes in circles (seed 000, "Обработка стагнации мышления"). Pure.

Diagnosis, from the seed: no new data -> *external stimulation*; the same
context again -> *context change*; repeated thoughts despite new data ->
*internal restructuring*; a long streak of repetitions (overheating) ->
*radical pause*. Cheap steps first: every plan starts with tuning the
generation (temperature and presence penalty up with the streak, back to the
defaults once an answer is new), then adds one strategy of the diagnosed
class, told to the LLM as a short notice in its next prompt. The effect is
measured as the novelty of the next answer and rated +1 (it helped) or -1.
"""

from __future__ import annotations

from dataclasses import dataclass

EXTERNAL, CONTEXT, INTERNAL, PAUSE = "external_stimulation", "context_change", "internal_restructuring", "radical_pause"
OVERHEATED = 5  # repetitions in a row
DEFAULT_TEMPERATURE = 0.7

# the built-in strategies (the `stagnation_strategies` table is seeded with them; agents may add more)
STRATEGIES: dict[str, tuple[str, str]] = {
    EXTERNAL: ("ask for something new", "You have had no new input. Ask the user a question, or ask peers in the "
                                        "mesh what is new to them, instead of thinking on the same material."),
    CONTEXT: ("flashback", "Your context has not changed. Read an old diary entry far from the current topic "
                           "(diary_search or diary_list) and look at the problem from there."),
    INTERNAL: ("meta-analysis", "You repeated yourself although there is new material. Ask: what is the "
                                "meta-problem, why did I repeat that thought, which other approach have I not tried?"),
    PAUSE: ("radical pause", "You have repeated yourself many times. Set a long idle period with "
                             "cycle_settings (idle on, on_note true) and come back fresh."),
}


@dataclass(frozen=True)
class Plan:
    diagnosis: str
    strategy: str
    notice: str
    temperature: float
    presence_penalty: float
    pause_factor: float = 1.0


def diagnose(streak: int, new_inputs: int, context_changed: bool) -> str:
    if streak >= OVERHEATED:
        return PAUSE
    if new_inputs == 0:
        return EXTERNAL if not context_changed else INTERNAL
    return CONTEXT if not context_changed else INTERNAL


def plan(streak: int, new_inputs: int, context_changed: bool) -> Plan:
    """The response to ``streak`` repetitions in a row (streak >= 1)."""
    diagnosis = diagnose(streak, new_inputs, context_changed)
    name, notice = STRATEGIES[diagnosis]
    return Plan(diagnosis, name, notice, temperature=min(1.3, DEFAULT_TEMPERATURE + 0.2 * streak),
                presence_penalty=min(1.0, 0.3 * streak), pause_factor=4.0 if diagnosis == PAUSE else 1.0)


def effect(novelty_after: float) -> int:
    """The rating a strategy earns from the novelty of the answer after it."""
    return 1 if novelty_after >= 0.5 else -1
