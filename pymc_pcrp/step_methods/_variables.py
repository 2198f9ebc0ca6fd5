"""Which variables one :class:`~pymc_pcrp.PCRPGibbs` step updates.

``pm.sample`` hands the step class every ``PowerCRP`` variable and every
``alpha`` whose competence it claimed; :func:`group_vars` splits them into one
group per ``PowerCRP`` (with the ``alpha`` it owns) and the alphas left to
:class:`~pymc_pcrp.PCRPHyper`; :func:`split_vars` reads one step's group.
"""

from __future__ import annotations

import pymc as pm

from pymc.step_methods.compound import CompoundStep
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.step_methods._alpha_update import claimed_alpha

__all__ = ["group_vars", "is_labels", "model_value_vars", "several_steps", "split_vars"]


def model_value_vars(vars, model=None) -> tuple[pm.Model, list]:
    """Return the model from the context (or ``model``) and the value variables of ``vars``.

    ``vars`` may be random or value variables; ``None`` stands for all the
    model's value variables.
    """
    model = pm.modelcontext(model)
    return model, get_value_vars_from_user_vars(model.value_vars if vars is None else vars, model)


def is_labels(model, var) -> bool:
    """Whether a value variable is that of a ``PowerCRP``."""
    return isinstance(getattr(model.values_to_rvs[var].owner, "op", None), PowerCRPRV)


def group_vars(model, value_vars: list) -> tuple[list[list], list]:
    """Split variables given to :class:`PCRPGibbs` into its steps and :class:`PCRPHyper` steps.

    Returns ``(groups, hyper)``: a list per ``PowerCRP`` (with its owned
    ``alpha`` when that is among the variables), one list per other variable
    except the alphas that cannot be owned, which are in ``hyper``.
    """
    owners = {}
    for var in value_vars:
        if is_labels(model, var):
            alpha = claimed_alpha(model, model.values_to_rvs[var])
            if alpha is not None and any(alpha is v for v in value_vars):
                owners[alpha] = var
    groups, hyper = [], []
    for var in value_vars:
        if is_labels(model, var):
            groups.append([var, *[a for a, owner in owners.items() if owner is var]])
        elif var in owners:
            continue
        elif getattr(model.values_to_rvs[var].tag, "pcrp_gibbs_alpha", False) is True:
            hyper.append(var)
        else:
            groups.append([var])  # refused by __init__, with its message
    return groups, hyper


def split_vars(model, vars: list) -> tuple:
    """``(labels, owned alpha or None)`` of one step's value variables, or ``ValueError``."""
    if len(vars) == 1:
        return vars[0], None
    if len(vars) == 2:
        for labels, alpha in (vars, vars[::-1]):
            if (
                is_labels(model, labels)
                and claimed_alpha(model, model.values_to_rvs[labels]) is alpha
            ):
                return labels, alpha
    raise ValueError(
        "PCRPGibbs updates one PowerCRP variable per step, with its alpha when that is a free "
        "random variable used by that PowerCRP alone (and the power is fixed); pass one "
        "variable or these two (pm.sample does this automatically)."
    )


def several_steps(gibbs_class, hyper_class, groups: list, hyper: list, rest: tuple, kwargs: dict):
    """Return the steps of several groups: one ``gibbs_class`` step per group, then hyper steps.

    Their generators are children of ``kwargs["rng"]``; the alphas in ``hyper``
    get a ``hyper_class`` (:class:`~pymc_pcrp.PCRPHyper`) step each. One step is
    returned as it is, several as a ``CompoundStep``.
    """
    rngs = get_random_generator(kwargs.pop("rng", None)).spawn(len(groups) + len(hyper))
    steps = [
        gibbs_class(group, *rest, rng=rng, blocked=True, **kwargs)
        for group, rng in zip(groups, rngs, strict=False)
    ]
    shared = {k: kwargs.get(k) for k in ("model", "initial_point", "compile_kwargs")}
    steps += [
        hyper_class([var], rng=rng, **shared)
        for var, rng in zip(hyper, rngs[len(groups) :], strict=True)
    ]
    return steps[0] if len(steps) == 1 else CompoundStep(steps)
