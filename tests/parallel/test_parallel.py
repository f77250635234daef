import numpy as np
import pytest

from stanlogz.errors import InputError
from stanlogz.parallel import child_sequence, run_parallel, spawn_generators


def _draw(task, rng):
    # Module-level so the process backend can pickle it.
    scale, n = task
    return scale * rng.standard_normal(n)


TASKS = [(1.0, 3), (2.0, 2), (0.5, 4), (3.0, 1), (1.5, 5)]


@pytest.mark.parametrize(
    ("n_workers", "backend"), [(2, "thread"), (2, "process"), (2, "auto"), (None, "auto")]
)
def test_results_do_not_depend_on_workers_or_backend(n_workers, backend):
    ref = run_parallel(_draw, TASKS, seed=7, n_workers=1)
    got = run_parallel(_draw, TASKS, seed=7, n_workers=n_workers, backend=backend)
    assert len(got) == len(ref)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_each_task_gets_the_generator_spawned_by_its_index():
    got = run_parallel(_draw, TASKS, seed=11, n_workers=2, backend="thread")
    children = np.random.SeedSequence(11).spawn(len(TASKS))
    for (scale, n), child, out in zip(TASKS, children, got, strict=True):
        np.testing.assert_array_equal(out, scale * np.random.default_rng(child).standard_normal(n))
    # Distinct tasks get distinct streams.
    assert not np.allclose(got[0][:1], got[2][:1])


def test_child_sequence_is_repeatable_and_spawn_generators_match():
    a = child_sequence(3, 4).generate_state(2)
    b = child_sequence(3, 4).generate_state(2)
    np.testing.assert_array_equal(a, b)
    g = spawn_generators(3, 5)[4]
    np.testing.assert_array_equal(g.integers(0, 2**31, 3),
                                  np.random.default_rng(child_sequence(3, 4)).integers(0, 2**31, 3))


def test_unpicklable_function_falls_back_to_threads():
    offset = 5.0
    got = run_parallel(lambda t, rng: t + offset + 0 * rng.uniform(), [1.0, 2.0], seed=0,
                       n_workers=2)
    assert got == [6.0, 7.0]
    with pytest.raises(InputError):
        run_parallel(lambda t, rng: t, [1.0, 2.0], seed=0, n_workers=2, backend="process")


def test_bad_arguments_raise_input_error():
    with pytest.raises(InputError):
        run_parallel(_draw, TASKS, seed=0, backend="gpu")
    with pytest.raises(InputError):
        run_parallel(_draw, TASKS, seed=0, n_workers=0)
    with pytest.raises(InputError):
        run_parallel(_draw, TASKS, seed=-1)
    assert run_parallel(_draw, [], seed=0) == []
