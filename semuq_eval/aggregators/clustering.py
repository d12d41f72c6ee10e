"""Semantic clustering: from a comparison matrix to a partition of the N answers (App. A.2)."""

from __future__ import annotations

import numpy as np

from semuq_eval.aggregators.base import as_matrix_stack


def to_equivalence(S: np.ndarray, tau: float = 0.5) -> np.ndarray:
    """Boolean equivalence matrix E_ij = S_ij > tau (the paper's SE_Enc / CAE_Enc rule, Sec. 4.1).

    The diagonal is set to True; a boolean S is returned as is (diagonal set), so hard NLI matrices pass
    through."""
    arr = np.asarray(S)
    if arr.dtype == bool:
        E = arr.copy()
    else:
        stack, single = as_matrix_stack(arr)
        E = stack > tau
        E = E[0] if single else E
    n = E.shape[-1]
    E[..., np.arange(n), np.arange(n)] = True
    return E


def cluster(E: np.ndarray) -> np.ndarray:
    """Greedy semantic clustering of App. A.2; returns integer labels (N,) or (B, N).

    Answers are visited in order; each joins the earliest cluster whose FIRST member it is equivalent to in
    both directions (E_ij and E_ji, the bidirectional rule of Eq. S_nli), else starts a new one; labels are
    numbered in order of creation. A graded matrix must first go through :func:`to_equivalence`."""
    arr = np.asarray(E)
    if arr.dtype != bool:
        raise TypeError(
            f"cluster() needs a boolean equivalence matrix, got dtype={arr.dtype}; "
            "use to_equivalence(S, tau) for a graded matrix"
        )
    stack, single = as_matrix_stack(arr, name="E")
    mutual = (stack > 0.5) & (np.swapaxes(stack, -1, -2) > 0.5)
    n_batch, n = mutual.shape[:2]
    rows = np.arange(n_batch)
    labels = np.zeros((n_batch, n), dtype=np.int64)
    first_member = np.zeros((n_batch, n), dtype=np.int64)  # first answer of cluster k
    n_clusters = np.ones(n_batch, dtype=np.int64)
    cluster_ids = np.arange(n)
    for i in range(1, n):
        joins = mutual[rows[:, None], i, first_member] & (cluster_ids < n_clusters[:, None])
        found = joins.any(axis=1)
        labels[:, i] = np.where(found, joins.argmax(axis=1), n_clusters)
        new = ~found
        first_member[rows[new], n_clusters[new]] = i
        n_clusters += new
    return labels[0] if single else labels


def cluster_sizes(labels: np.ndarray) -> np.ndarray:
    """Cluster sizes |C_k| as a (B, N) array (zero for unused cluster ids) from (B, N) labels."""
    labels = np.atleast_2d(labels)
    return (labels[:, :, None] == np.arange(labels.shape[1])).sum(axis=1)
