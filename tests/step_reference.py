"""Which step methods ``pm.sample`` builds for a model, for tests that check the assignment."""

import pymc as pm

from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers


def built_steps(model) -> set[tuple[str, tuple[str, ...]]]:
    """``{(class name, sorted value-variable names)}`` of the steps ``pm.sample`` builds."""
    with model:
        _, selected = assign_step_methods(model)
        built = instantiate_steppers(model, [], selected)
    stack, leaves = list(built) if isinstance(built, list) else [built], set()
    while stack:
        step = stack.pop()
        if isinstance(step, pm.CompoundStep):
            stack.extend(step.methods)
        else:
            leaves.add((type(step).__name__, tuple(sorted(v.name for v in step.vars))))
    return leaves
