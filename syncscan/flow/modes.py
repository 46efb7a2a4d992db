"""Mode predicates: instance-constant conditions, decided consistently per path.

A condition atom is a mode predicate when it reads an attribute the step path
never assigns (set once in `__init__` or at load time), or a root parameter
with a boolean default (`dummy_run=False`). Predicates correlate: an attribute
assigned `X() if P else None` is non-None exactly when P holds, so testing it
is testing P; one assigned `0` and then, under P, a value that is surely
non-zero (`n = 0; if P: n = cfg.k` with `k` validated positive) is truthy
exactly when P holds. One the step sets lazily under P (`if P: if self.ev is
None: self.ev = Event()`) found set implies P, since P held on the step that
set it. A mode object's method that is one comparison with a constant
(`return self != Algo.NONE`) is that comparison. Anything else is data: both
branches stay possible, and no assumption is recorded (three-valued logic).
"""

from __future__ import annotations

from dataclasses import dataclass

from syncscan.flow.buffers import BufferOracle
from syncscan.flow.frames import Frame
from syncscan.flow.keys import assigned_key, entry_key, is_step_fact
from syncscan.flow.state import PathState, is_root_parameter
from syncscan.index import ir
from syncscan.index.reads import Memo
from syncscan.index.summary import ModuleSummary
from syncscan.resolve.types import Scope, TypeOracle

_MAX_DEPTH = 6


class ModeOracle:
    def __init__(
        self,
        types: TypeOracle,
        buffers: BufferOracle,
        assigned_on_step: set[tuple[str, str]],
        root_mode_params: frozenset[str],
        assume_true: frozenset[str] = frozenset(),
        idle_conditions: frozenset[str] = frozenset(),
        step_flags: frozenset[str] = frozenset(),
        positive_attributes: frozenset[str] = frozenset(),
        assume_false: frozenset[str] = frozenset(),
    ) -> None:
        self.assume_true = assume_true
        self.assume_false = assume_false
        self.positive_attributes = positive_attributes
        self.step_flags = step_flags
        self.idle_conditions = idle_conditions
        self.types = types
        self.buffers = buffers
        self.assigned_on_step = assigned_on_step
        self.root_mode_params = root_mode_params
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._set_when: Memo[tuple[str, str, bool], tuple[ir.Expr, Scope] | None] = Memo()
        self._set_lazily: Memo[tuple[str, str, bool], tuple[Scope, list[ir.Expr]] | None] = Memo()

    # ------------------------------------------------------------------ splitting
    def split(
        self, test: ir.Expr, frame: Frame, states: list[PathState], depth: int = 0
    ) -> tuple[list[PathState], list[PathState]]:
        """(states where `test` may hold, states where it may not)."""
        if depth > _MAX_DEPTH:
            return states, states
        if isinstance(test, ir.Not):
            t, f = self.split(test.operand, frame, states, depth + 1)
            return f, t
        if isinstance(test, ir.BoolOp):
            if test.op == "and":
                true_states, false_states = states, []
                for value in test.values:
                    t, f = self.split(value, frame, true_states, depth + 1)
                    false_states = false_states + f
                    true_states = t
                return true_states, false_states
            false_states, true_states = states, []
            for value in test.values:
                t, f = self.split(value, frame, false_states, depth + 1)
                true_states = true_states + t
                false_states = f
            return true_states, false_states
        if isinstance(test, ir.NamedExpr):
            return self.split(test.value, frame, states, depth + 1)
        const = _const_param(test, frame)
        if const is not None:  # a literal True/False passed (or defaulted): decided
            return (states, []) if const else ([], states)
        if (
            isinstance(test, ir.Name)
            and frame.scope.function is not None
            and frame.param(test.id) is None
            and test.id not in self.root_mode_params
        ):
            # A local assigned once (`is_ngram = self.spec and self.spec.ngram`):
            # testing it tests what it was assigned, combinations included.
            values = self.types.local_values(frame.function).get(test.id, [])
            if len(values) == 1 and isinstance(values[0], ir.BoolOp | ir.Not | ir.Compare):
                return self.split(values[0], frame, states, depth + 1)
        if isinstance(test, ir.Const):
            return (states, []) if bool(test.value) else ([], states)
        if isinstance(test, ir.Call) and self._assumed_true(test, frame):
            return states, []
        if isinstance(test, ir.Name | ir.Attr) and self._assumed_false(test, frame):
            return [], states
        idle = self._idle(test, frame)
        if idle is not None:
            return self._split_on(*idle, states)
        flag = self._flag(test, frame)
        if flag is not None:
            path, polarity = flag
            split = self._split_on(assigned_key(path), polarity, states, entry_key(path))
            return self._set_lazily_under_modes(test, frame, split)
        assigned = self._assigned(test, frame, states)
        if assigned is not None:
            split = self._split_on(*assigned, states)
            return self._set_lazily_under_modes(test, frame, split)
        atom = self.predicate(test, frame, depth)
        if atom is None:
            return self._set_lazily_under_modes(test, frame, (states, states))
        if isinstance(atom, Correlated):
            t, f = self.split(atom.test, atom.frame, states, depth + 1)
            return (t, f) if atom.polarity else (f, t)
        key, polarity = atom
        return self._split_on(key, polarity, states)

    def _split_on(
        self, key: str, polarity: bool, states: list[PathState], entry: str | None = None
    ) -> tuple[list[PathState], list[PathState]]:
        """Split on `key == polarity`, consistently with what each state assumed
        (and the modes a joined state may be in). With `entry` (a per-step flag),
        a state that had not decided the flag also records it as found at the
        step's entry: the previous step left it so (`StepAnalyzer` pairs by it)."""
        true_states: list[PathState] = []
        false_states: list[PathState] = []
        for state in states:
            known = state.assumed(key)
            if known is None:
                fresh = entry is not None and state.assumed(entry) is None
                for value, out in ((polarity, true_states), (not polarity, false_states)):
                    if state.admits(key, value):
                        decided = state.assume(key, value)
                        out.append(decided.assume(entry, value) if fresh else decided)
            elif known == polarity:
                true_states.append(state)
            else:
                false_states.append(state)
        return true_states, false_states

    def _set_lazily_under_modes(
        self, test: ir.Expr, frame: Frame, split: tuple[list[PathState], list[PathState]]
    ) -> tuple[list[PathState], list[PathState]]:
        """`split` of a test of an attribute the step sets lazily under instance
        modes (`if P: if self.ev is None: self.ev = Event()`), with P decided on
        the side where it is set: P held on the step that set it, and a mode
        holds on every step. Unset says nothing (no step may have set it yet)."""
        found = ir.none_test(test)
        expr, set_if_true = found if found is not None else (test, True)
        owner = _owner(expr, frame)
        if owner is None:
            return split
        (class_qualname, attr), holder = owner
        lazy = self._lazy_modes(class_qualname, attr, truth=found is None)
        if lazy is None:
            return split
        scope, conditions = lazy
        inner = Frame(scope, holder, (), frame.mode_params, frame.relpath, frame.anchors)
        set_states = split[0] if set_if_true else split[1]
        for condition in conditions:
            holds = True
            while isinstance(condition, ir.Not):
                condition, holds = condition.operand, not holds
            atom = self.predicate(condition, inner)
            # Only an instance mode held then and now: not per-step data, nor a
            # root parameter (each call of the entry point chooses its own).
            if (
                isinstance(atom, tuple)
                and not is_per_step(atom[0], self.idle_conditions)
                and not is_root_parameter(atom[0])
            ):
                key, polarity = atom
                set_states = self._split_on(key, polarity == holds, set_states)[0]
        return (set_states, split[1]) if set_if_true else (split[0], set_states)

    def _lazy_modes(
        self, class_qualname: str, attr: str, truth: bool
    ) -> tuple[Scope, list[ir.Expr]] | None:
        """The scope of the class's only setting assignment of an attribute the
        step assigns, and the conditions around it less its own `is None` test;
        None when there are none."""
        key = (class_qualname, attr, truth)
        return self._set_lazily.made(key, lambda: self._lazy_setting(class_qualname, attr, truth))

    def _lazy_setting(
        self, class_qualname: str, attr: str, truth: bool
    ) -> tuple[Scope, list[ir.Expr]] | None:
        if (class_qualname, attr) not in self.assigned_on_step:
            return None
        setting = self._setting_assignments(class_qualname, attr, truth)
        if len(setting) == 1 and (scope := setting[0][1]).function is not None:
            guard = _guard_of(scope.function.body, attr) or []
            conditions = [c for c in _conjuncts(guard) if not _tests_attr(c, attr)]
            return (scope, conditions) if conditions else None
        return None

    def _flag(self, test: ir.Expr, frame: Frame) -> tuple[str, bool] | None:
        """`x.flag is None` of a per-step flag (assigned on the step, compared
        with None): (its access path, whether the test's truth means it is set)."""
        found = ir.none_test(test) if self.step_flags else None
        if found is None:
            return None
        operand, polarity = found
        path = self.buffers.access_path(operand, frame)
        return (path, polarity) if path is not None and self._is_flag(path) else None

    def _is_flag(self, path: str) -> bool:
        return path.rsplit(".", 1)[-1] in self.step_flags

    def _idle(self, test: ir.Expr, frame: Frame) -> tuple[str, bool] | None:
        """A pack's idle condition (`a.n == 0`), written as is or as the truth of
        `a.n` (or of a local holding it): (the condition, what the test's truth means)."""
        text = condition_text(test)
        if text is not None:
            return (text, True) if text in self.idle_conditions else None
        if isinstance(test, ir.Name) and frame.scope.function is not None:
            values = self.types.local_values(frame.function).get(test.id, [])
            test = values[0] if len(values) == 1 else test
        name = ir.dotted(test)
        if name is not None and f"{name} == 0" in self.idle_conditions:
            return (f"{name} == 0", False)
        return None

    def _assigned(
        self, test: ir.Expr, frame: Frame, states: list[PathState]
    ) -> tuple[str, bool] | None:
        """`self.x is None` / `self.x` where this path assigned `self.x` itself."""
        found = ir.none_test(test)
        if found is None and isinstance(test, ir.Compare):
            return None
        expr, polarity = found if found is not None else (test, True)
        if not isinstance(expr, ir.Attr):
            return None
        path = self.buffers.access_path(expr, frame)
        if path is None:
            return None
        key = assigned_key(path)
        if not any(s.assumed(key) is not None for s in states):
            return None
        return key, polarity

    def _assumed_true(self, call: ir.Call, frame: Frame) -> bool:
        """`torch.accelerator.is_available()`: the packs say it holds where it matters."""
        target = self.types.program.resolve_dotted(frame.scope.module, call.func)
        return target is not None and target in self.assume_true

    def _assumed_false(self, name: ir.Name | ir.Attr, frame: Frame) -> bool:
        """A module-level flag the packs say is off in the configuration analysed
        (a CI-only assertion switch read from the environment)."""
        if not self.assume_false or frame.scope.function is None:
            return False
        if isinstance(name, ir.Name) and frame.param(name.id) is not None:
            return False
        target = self.types.program.resolve_dotted(frame.scope.module, name)
        return target is not None and target in self.assume_false

    # ------------------------------------------------------------------ atoms
    def predicate(
        self, expr: ir.Expr, frame: Frame, depth: int = 0, truth: bool = True
    ) -> tuple[str, bool] | Correlated | None:
        """(key, polarity), a correlated condition, or None for data. `truth`:
        the test is `expr`'s truth, not `expr is None`."""
        if depth > _MAX_DEPTH:
            return None  # locals assigned from each other (`a = b; b = a`)
        if isinstance(expr, ir.Compare) and len(expr.ops) == 1:
            op, right = expr.ops[0], expr.comparators[0]
            none = ir.none_test(expr)
            if none is not None:
                inner = self.predicate(none[0], frame, depth + 1, truth=False)
                if inner is None:
                    return None
                if isinstance(inner, Correlated):
                    return inner.polar(inner.polarity == none[1])
                return (inner[0], inner[1] == none[1])
            if op in ("==", "!=") and isinstance(right, ir.Const):
                key = self._mode_path(expr.left, frame)
                if key is None:
                    return None
                return (f"{key} == {right.value!r}", op == "==")
            constant = self._constant(right, frame.scope.module)
            if op in ("==", "!=", "is", "is not") and constant is not None:
                key = self._mode_path(expr.left, frame)
                return (f"{key} == {constant}", op in ("==", "is")) if key else None
            return None
        if isinstance(expr, ir.Call):
            compared = self._comparing_method(expr, frame)
            if compared is not None:
                return compared
        if isinstance(expr, ir.Name) and frame.scope.function is not None:
            values = self.types.local_values(frame.function).get(expr.id, [])
            if len(values) == 1 and frame.param(expr.id) is None:
                return self.predicate(values[0], frame, depth + 1)
        correlated = self._correlated(expr, frame, truth)
        if correlated is not None:
            return correlated
        key = self._mode_path(expr, frame) or self._singleton_attr(expr, frame)
        return (key, True) if key is not None else None

    def _comparing_method(self, call: ir.Call, frame: Frame) -> tuple[str, bool] | None:
        """`self.algo.is_some()` where every class the mode object may be has
        `is_some` as `return self != Algo.NONE`: that comparison, keyed as if
        written inline, so `is_some()` and `is_none()` are one predicate."""
        if call.args or call.kwargs or not isinstance(call.func, ir.Attr):
            return None
        key = self._mode_path(call.func.base, frame)
        if key is None:
            return None
        classes = self.types.expr_types(call.func.base, frame.scope)
        found = {self._compared_constant(c, call.func.attr) for c in classes}
        if len(found) != 1 or None in found:
            return None
        constant, equal = found.pop()
        return f"{key} == {constant}", equal

    def _compared_constant(self, class_qualname: str, method: str) -> tuple[str, bool] | None:
        """(the constant, whether equal means true) of a method whose body is
        `return self == C` / `!=` / `is` / `is not` with C a named constant."""
        function = self.types.program.find_method(class_qualname, method)
        if function is None:
            return None
        body = [s for s in function.body if not _is_docstring(s)]
        if len(body) != 1 or not isinstance(body[0], ir.Return):
            return None
        value = body[0].value
        if not (
            isinstance(value, ir.Compare)
            and len(value.ops) == 1
            and value.ops[0] in ("==", "!=", "is", "is not")
            and isinstance(value.left, ir.Name)
            and value.left.id == "self"
        ):
            return None
        module = self.types.program.module_of(function.qualname)
        constant = self._constant(value.comparators[0], module) if module else None
        return (constant, value.ops[0] in ("==", "is")) if constant else None

    def _constant(self, expr: ir.Expr, module: ModuleSummary) -> str | None:
        """The qualified name of a module-level constant or class attribute
        (`Algo.NONE`) written in `module`; None for anything else."""
        if not isinstance(expr, ir.Attr):
            return None
        return self.types.program.resolve_dotted(module, expr)

    def _singleton_attr(self, expr: ir.Expr, frame: Frame) -> str | None:
        """`get_pp_group().is_last_rank`: an attribute of what a module-level
        function returns when called with no arguments (a process-wide group or
        config accessor), constant for the life of the instance."""
        if not (isinstance(expr, ir.Attr) and isinstance(expr.base, ir.Call)):
            return None
        call = expr.base
        if call.args or call.kwargs or not isinstance(call.func, ir.Name):
            return None
        target = self.types.program.resolve_dotted(frame.scope.module, call.func)
        if target is None or self.types.program.lookup(target).kind != "function":
            return None
        return f"{call.func.id}().{expr.attr}"

    def _mode_path(self, expr: ir.Expr, frame: Frame) -> str | None:
        path = self.buffers.access_path(expr, frame)
        if path is None:
            return None
        if path in self.root_mode_params:
            return path
        if not path.startswith("self.") or "[]" in path:
            return None
        if self._is_flag(path):
            return None
        first = _first_self_attr(expr, frame, self.types)
        if first is None and isinstance(expr, ir.Name) and frame.param(expr.id) is not None:
            # A parameter bound to the root's attribute (`async_barrier(self.ev)`
            # testing `event is not None`): the same mode as testing `self.ev`.
            first = path.split(".")[1]
            if any(attr == first for _, attr in self.assigned_on_step):
                return None
            return path
        if first is None:
            return None
        if frame.scope.self_class and (frame.scope.self_class, first) in self.assigned_on_step:
            return None
        return path

    def _correlated(self, expr: ir.Expr, frame: Frame, truth: bool) -> Correlated | None:
        """`self.ev` (or a parameter bound to the caller's `self.ev`) where the
        class sets `ev` non-None (or, for a truth test, truthy) exactly when P
        holds: testing it tests P."""
        found_owner = _owner(expr, frame)
        if found_owner is None:
            return None
        owner, holder = found_owner
        found = self._set_when.made((*owner, truth), lambda: self._set_condition(*owner, truth))
        if found is None:
            return None
        test, scope = found
        inner = Frame(scope, holder, (), frame.mode_params, frame.relpath, frame.anchors)
        return Correlated(test, True, inner)

    def _set_condition(
        self, class_qualname: str, attr: str, truth: bool
    ) -> tuple[ir.Expr, Scope] | None:
        """The condition under which the class's only setting assignment of
        `attr` runs (the ifs around it, and an `X() if P else None` value), with
        the scope it is written in; None when `attr` is not set that way. The
        other assignments leave it unset: None, or for a truth test a falsy
        literal, where the setting value is then surely truthy."""
        if (class_qualname, attr) in self.assigned_on_step:
            return None
        values = self._assignments(class_qualname, attr)
        setting = self._setting_assignments(class_qualname, attr, truth)
        if len(setting) != 1 or setting[0][1].function is None:
            return None
        value, scope = setting[0]
        # Left falsy but not None (`n = 0`): only a value surely truthy sets it.
        falsy_unset = any(_is_falsy_literal(v) for v, _ in values)
        if truth and falsy_unset and not self._surely_truthy(value, scope):
            return None
        conditions: list[ir.Expr] = []
        if len(values) > 1:
            # `self.ev = None` then `if P: self.ev = Event()`: set exactly when P.
            guard = _guard_of(scope.function.body, attr)
            if guard is None:
                return None
            conditions.extend(guard)
        if isinstance(value, ir.IfExp) and _is_none(value.orelse) != _is_none(value.body):
            test = value.test
            conditions.append(test if _is_none(value.orelse) else ir.Not(test))
        if not conditions:
            return None
        if len(conditions) == 1:
            return conditions[0], scope
        return ir.BoolOp("and", tuple(conditions)), scope

    def _assignments(self, class_qualname: str, attr: str) -> list[tuple[ir.Expr, Scope]]:
        return [
            (value, scope)
            for target, value, scope in self.types.attribute_assignments(class_qualname)
            if target == attr
        ]

    def _setting_assignments(
        self, class_qualname: str, attr: str, truth: bool
    ) -> list[tuple[ir.Expr, Scope]]:
        """The assignments that set `attr`: not None, nor for a truth test a falsy literal."""
        return [
            (v, s)
            for v, s in self._assignments(class_qualname, attr)
            if not (_is_none(v) or (truth and _is_falsy_literal(v)))
        ]

    def _surely_truthy(self, value: ir.Expr, scope: Scope) -> bool:
        """A non-zero literal, a constructed object, or an attribute a pack says
        is validated positive (`SpeculativeConfig.num_speculative_tokens`)."""
        if isinstance(value, ir.Const):
            return bool(value.value)
        if isinstance(value, ir.Attr):
            return any(
                f"{t}.{value.attr}" in self.positive_attributes
                for t in self.types.expr_types(value.base, scope)
            )
        return isinstance(value, ir.Call) and self.types.surely_not_none(value, scope) is True


@dataclass(frozen=True)
class Correlated:
    """A test that means another condition: `test` (with `polarity`), written
    in `frame` (the method that sets the attribute, its `self` at the holder)."""

    test: ir.Expr
    polarity: bool
    frame: Frame

    def polar(self, polarity: bool) -> Correlated:
        return Correlated(self.test, polarity, self.frame)


def _owner(expr: ir.Expr, frame: Frame) -> tuple[tuple[str, str], str] | None:
    """((class, attribute), the path holding it) of `self.ev`, or of a
    parameter bound to the caller's `self.ev`."""
    attr = ir.self_attr(expr)
    if attr is not None and frame.scope.self_class:
        return (frame.scope.self_class, attr), frame.self_path
    if isinstance(expr, ir.Name) and (binding := frame.param(expr.id)) is not None:
        if binding.owner is None or binding.path is None or "." not in binding.path:
            return None
        return binding.owner, binding.path.rsplit(".", 1)[0]
    return None


def _conjuncts(tests: list[ir.Expr]) -> list[ir.Expr]:
    """The atoms that must all hold: `and`s flattened, `not (a or b)` as `not a`, `not b`."""
    out: list[ir.Expr] = []
    for test in tests:
        if isinstance(test, ir.BoolOp) and test.op == "and":
            out.extend(_conjuncts(list(test.values)))
        elif (
            isinstance(test, ir.Not)
            and isinstance(test.operand, ir.BoolOp)
            and test.operand.op == "or"
        ):
            out.extend(_conjuncts([ir.Not(v) for v in test.operand.values]))
        else:
            out.append(test)
    return out


def _tests_attr(test: ir.Expr, attr: str) -> bool:
    """Whether `test` reads `self.attr` (the lazy `if self.ev is None`)."""
    return any(ir.self_attr(e) == attr for e in ir.walk(test))


def _guard_of(stmts: tuple[ir.Stmt, ...], attr: str) -> list[ir.Expr] | None:
    """The tests of the ifs around the one setting `self.attr = ...` in
    `stmts` (negated on an else branch); None when it also runs without them
    or sits in a loop (the ifs do not say when it runs)."""
    for stmt in stmts:
        if not _assigns((stmt,), attr):
            continue
        if isinstance(stmt, ir.Assign):
            return []
        if isinstance(stmt, ir.If):
            in_body, in_else = _assigns(stmt.body, attr), _assigns(stmt.orelse, attr)
            if in_body == in_else:
                return None
            inner = _guard_of(stmt.body if in_body else stmt.orelse, attr)
            if inner is None:
                return None
            return [stmt.test if in_body else ir.Not(stmt.test), *inner]
        if isinstance(stmt, ir.With):
            return _guard_of(stmt.body, attr)
        return None
    return None


def _assigns(stmts: tuple[ir.Stmt, ...], attr: str) -> bool:
    """Whether `self.attr = <not None, not a falsy literal>` is among `stmts`
    (at any depth)."""
    for stmt in stmts:
        if (
            isinstance(stmt, ir.Assign)
            and stmt.value is not None
            and not _is_none(stmt.value)
            and not _is_falsy_literal(stmt.value)
            and any(ir.self_attr(target) == attr for target in stmt.targets)
        ):
            return True
        if any(_assigns(child, attr) for child in ir.child_blocks(stmt)):
            return True
    return False


def is_per_step(predicate: str, idle_conditions: frozenset[str]) -> bool:
    """Data a step decides for itself (an idle step, an attribute the step set),
    as opposed to an instance mode that every step of the loop shares."""
    return predicate in idle_conditions or is_step_fact(predicate)


def condition_text(test: ir.Expr) -> str | None:
    """`a.b == 0` as text, for conditions a pack names."""
    if not (isinstance(test, ir.Compare) and len(test.ops) == 1):
        return None
    left, right = ir.dotted(test.left), test.comparators[0]
    if left is None or not isinstance(right, ir.Const):
        return None
    return f"{left} {test.ops[0]} {right.value!r}"


def _const_param(test: ir.Expr, frame: Frame) -> bool | None:
    """The literal True/False a tested parameter was passed, if any."""
    if not isinstance(test, ir.Name):
        return None
    binding = frame.param(test.id)
    return binding.const if binding is not None else None


def _is_docstring(stmt: ir.Stmt) -> bool:
    return (
        isinstance(stmt, ir.Eval)
        and isinstance(stmt.value, ir.Const)
        and isinstance(stmt.value.value, str)
    )


def _is_none(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value is None


def _is_falsy_literal(expr: ir.Expr) -> bool:
    """`0`, `False`, `""`: an attribute left unset for a truth test."""
    return isinstance(expr, ir.Const) and expr.value is not None and not expr.value


def _first_self_attr(expr: ir.Expr, frame: Frame, types: TypeOracle) -> str | None:
    """The attribute right after `self` in `self.a.b`, following locals."""
    chain: list[str] = []
    depth = 0
    while depth < 8:
        depth += 1
        if isinstance(expr, ir.Attr):
            chain.append(expr.attr)
            expr = expr.base
        elif isinstance(expr, ir.Subscript):
            expr = expr.base
        elif isinstance(expr, ir.Name):
            if expr.id == "self":
                return chain[-1] if chain else None
            values = types.local_values(frame.function).get(expr.id, [])
            if len(values) != 1:
                return None
            expr = values[0]
        else:
            return None
    return None
