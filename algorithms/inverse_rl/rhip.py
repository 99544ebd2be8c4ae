"""Receding-horizon inverse planning (RHIP) on a route graph: seed row 000#55.

Reference: ``seed-catalogue-000.md#55``; Barnes, Abueg, Lange, Deeds, Trader, Molitor, Wulfmeier,
O'Banion, "Massively Scalable Inverse Reinforcement Learning in Google Maps", ICLR 2024
(arXiv 2305.11290). What was read: the seed-coverage row and catalogue entry only ([V]: "graph
MDP; MaxEnt-IRL backward/forward passes as sparse mat-vecs; Dijkstra tail"; the horizon
extremes are the deterministic-planner IRL and MaxEnt IRL). The paper text and the authors' code
were not found in a 5-minute search; the passes below are reconstructed [A] from that description
and the classical algorithms it interpolates, and no equation number is cited.

Model [A]. A directed graph with ``n`` nodes and ``E`` edges ``tails -> heads`` (parallel edges
allowed), edge features ``phi (E, d)`` and rewards ``r = phi theta (E,)``, all ``< 0`` (costs
``-r > 0``, so the deterministic planner is Dijkstra). A demonstration is a path of edges from
an origin to its destination; the destination is absorbing with value 0.

RHIP with horizon H [A]:

* backward pass: ``V^0 = V_d``, the deterministic planner's values (Dijkstra: the largest route
  reward to the destination); then H soft Bellman backups
  ``Q^k(e) = r(e) + V^{k-1}(head e)``, ``V^k(s) = logsumexp_{e out of s} Q^k(e)``, ``V^k = 0`` at
  the destination;
* forward pass: from the origin, H steps of the stochastic policy
  ``pi_h(e) = exp(Q^{H-h}(e) - V^{H-h}(tail e))`` (step h = 0..H-1; mass that reaches the
  destination stops), then every remaining unit of mass follows the Dijkstra route (the tail);
* the route distribution this defines is ``P_H(tau) = exp(r(tau) - V^H(origin))`` on the routes
  whose edges after the H-th are the Dijkstra route, 0 elsewhere; the objective is
  ``J_H(theta) = sum_demos r_theta(tau) - V^H_theta(origin)`` (the log-likelihood wherever the
  demonstration's tail is a Dijkstra route) and its gradient is
  ``sum_demos phi(tau) - E_{P_H}[phi]`` (exact wherever the Dijkstra routes are unique).

Extremes: H = 0 gives ``J_0 = r(tau) - max_route r`` and the gradient ``phi(tau) -
phi(best route)`` (the deterministic-planner / max-margin-planning IRL without a margin); H >=
the longest route length (``H=None`` on a DAG) gives MaxEnt IRL exactly (``V^H`` = the soft
value, independent of ``V_d``). Deviations: one destination per demonstration, no
sparse-GPU kernels, no per-state receding variant (stochastic policy restarted at each state
of the demonstration) -- that variant is not implemented.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.inverse_rl.expert_resets import IRLRun, empirical_occupancy
from theorylab.algorithms.registry import register


@dataclass(frozen=True)
class RouteGraph:
    """A route graph: ``n`` nodes, edges ``tails, heads (E,)`` ints, features ``phi (E, d)``."""

    n: int
    tails: np.ndarray
    heads: np.ndarray
    phi: np.ndarray

    def __post_init__(self) -> None:
        t, h = np.asarray(self.tails), np.asarray(self.heads)
        if t.shape != h.shape or t.ndim != 1:
            raise ValueError(f"tails and heads must be (E,) ints of one length, got {t.shape}, "
                             f"{h.shape}")  # fmt: skip
        if t.size and (min(t.min(), h.min()) < 0 or max(t.max(), h.max()) >= self.n):
            raise ValueError(f"edge endpoints must be nodes 0..{self.n - 1}")
        if np.asarray(self.phi).shape[0] != t.size or np.asarray(self.phi).ndim != 2:
            raise ValueError(f"phi must be (E, d) with E = {t.size}, got "
                             f"{np.asarray(self.phi).shape}")  # fmt: skip

    def rewards(self, theta: np.ndarray) -> np.ndarray:
        """``r = phi theta (E,)``; raises unless every reward is < 0 (Dijkstra's costs > 0)."""
        r = np.asarray(self.phi, dtype=float) @ np.asarray(theta, dtype=float)
        if not np.all(r < 0):
            raise ValueError(f"rhip needs every edge reward phi theta < 0 (costs > 0 for "
                             f"Dijkstra), got max {r.max():.4g}")  # fmt: skip
        return r


def dijkstra(graph: RouteGraph, r: np.ndarray, dest: int) -> tuple[np.ndarray, np.ndarray]:
    """The deterministic planner: ``V_d (n,)`` the largest route reward to ``dest`` (-inf when
    unreachable) and ``next_edge (n,)`` the edge it takes (-1 at ``dest`` and unreachable); ties
    go to the lower edge index. Dijkstra on the reversed graph with costs ``-r > 0``."""
    into = [[] for _ in range(graph.n)]  # edges by head
    for e, h in enumerate(graph.heads):
        into[int(h)].append(e)
    cost = np.full(graph.n, np.inf)
    nxt = np.full(graph.n, -1, dtype=np.int64)
    cost[dest] = 0.0
    heap, done = [(0.0, int(dest))], np.zeros(graph.n, dtype=bool)
    while heap:
        c, v = heapq.heappop(heap)
        if done[v]:
            continue
        done[v] = True
        for e in into[v]:
            u = int(graph.tails[e])
            cand = c - r[e]
            if not done[u] and (cand < cost[u] or (cand == cost[u] and e < nxt[u])):
                cost[u], nxt[u] = cand, e
                heapq.heappush(heap, (cand, u))
    return -cost, nxt


def route_features(graph: RouteGraph, nxt: np.ndarray, dest: int) -> np.ndarray:
    """``F (n, d)``: the summed features of each node's Dijkstra route to ``dest`` (0 where
    there is none)."""
    F = np.zeros((graph.n, graph.phi.shape[1]))
    for s in range(graph.n):
        u, steps = s, 0
        while u != dest and nxt[u] >= 0 and steps <= graph.n:
            F[s] += graph.phi[nxt[u]]
            u, steps = int(graph.heads[nxt[u]]), steps + 1
    return F


def longest_route(graph: RouteGraph) -> int:
    """The most edges on any route (a DAG's longest path); raises on a cycle."""
    indeg = np.bincount(graph.heads, minlength=graph.n)
    order, stack = [], [s for s in range(graph.n) if indeg[s] == 0]
    out = [[] for _ in range(graph.n)]
    for e, t in enumerate(graph.tails):
        out[int(t)].append(int(graph.heads[e]))
    while stack:
        u = stack.pop()
        order.append(u)
        for v in out[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    if len(order) < graph.n:
        raise ValueError("rhip with H=None (MaxEnt) needs an acyclic graph; give a finite H")
    depth = np.zeros(graph.n, dtype=np.int64)
    for u in reversed(order):
        for v in out[u]:
            depth[u] = max(depth[u], depth[v] + 1)
    return int(depth.max()) if graph.n else 0


def soft_backups(graph: RouteGraph, r: np.ndarray, dest: int, V0: np.ndarray, H: int) -> np.ndarray:
    """``V (H + 1, n)``: ``V[0] = V0`` and ``V[k]`` the k-th soft Bellman backup (log-sum-exp
    over each node's out-edges of ``r + V[k-1](head)``, 0 at ``dest``, -inf without edges)."""
    V = np.empty((H + 1, graph.n))
    V[0] = V0
    for k in range(1, H + 1):
        q = r + V[k - 1][graph.heads]  # (E,)
        m = np.full(graph.n, -np.inf)
        np.maximum.at(m, graph.tails, q)
        safe = np.where(np.isfinite(m), m, 0.0)
        z = np.zeros(graph.n)
        np.add.at(z, graph.tails, np.exp(q - safe[graph.tails]))
        with np.errstate(divide="ignore"):
            V[k] = np.where(z > 0, safe + np.log(z), -np.inf)
        V[k, dest] = 0.0
    return V


def rhip_pass(
    graph: RouteGraph, r: np.ndarray, origin: int, dest: int, H: int | None
) -> tuple[float, np.ndarray]:
    """One demonstration's backward and forward pass: ``(V^H(origin), E_{P_H}[phi] (d,))``."""
    V_d, nxt = dijkstra(graph, r, dest)
    if not np.isfinite(V_d[origin]):
        raise ValueError(f"rhip: destination {dest} is unreachable from origin {origin}")
    H = longest_route(graph) if H is None else int(H)
    V = soft_backups(graph, r, dest, V_d, H)  # (H + 1, n)
    D = np.zeros(graph.n)  # (n,) mass not yet at dest
    D[origin] = 1.0
    expected = np.zeros(graph.phi.shape[1])
    for h in range(H):
        k = H - h
        with np.errstate(invalid="ignore"):
            pi = np.exp(r + V[k - 1][graph.heads] - V[k][graph.tails])  # (E,)
        flow = np.where(D[graph.tails] > 0, D[graph.tails] * np.nan_to_num(pi), 0.0)  # (E,)
        expected += flow @ graph.phi
        D = np.zeros(graph.n)
        np.add.at(D, graph.heads, flow)
        D[dest] = 0.0
    expected += D @ route_features(graph, nxt, dest)
    return float(V[H][origin]), expected


def rhip_objective(
    graph: RouteGraph, theta: np.ndarray, demos: list[np.ndarray], H: int | None
) -> tuple[float, np.ndarray]:
    """``(J_H(theta), grad (d,))``, summed over ``demos`` (each a path: edge indices from its
    origin to its destination, the last edge's head)."""
    if H is not None and (isinstance(H, bool) or int(H) != H or H < 0):
        raise ValueError(f"rhip horizon H must be an integer >= 0 or None (MaxEnt), got {H!r}")
    r = graph.rewards(theta)
    J, grad = 0.0, np.zeros(graph.phi.shape[1])
    passes: dict[tuple[int, int], tuple[float, np.ndarray]] = {}  # one pass per (origin, dest)
    for path in demos:
        path = np.asarray(path, dtype=np.int64)
        if path.size == 0 or np.any(graph.heads[path[:-1]] != graph.tails[path[1:]]):
            raise ValueError(f"a demonstration must be a non-empty connected edge path, got "
                             f"{path.tolist()}")  # fmt: skip
        key = (int(graph.tails[path[0]]), int(graph.heads[path[-1]]))
        if key not in passes:
            passes[key] = rhip_pass(graph, r, *key, H)
        v, expected = passes[key]
        J += float(r[path].sum()) - v
        grad += graph.phi[path].sum(axis=0) - expected
    return J, grad


def fit_rhip(
    graph: RouteGraph,
    demos: list[np.ndarray],
    H: int | None,
    theta0: np.ndarray,
    *,
    steps: int = 200,
    lr: float = 0.5,
    ceiling: float = -0.05,
) -> np.ndarray:
    """Projected gradient ascent on ``J_H / len(demos)``: ``theta <- min(theta + lr g,
    ceiling)`` (keeps the rewards < 0 when ``phi >= 0`` with a positive entry per edge)."""
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite step > 0, got {lr!r}")
    theta = np.minimum(np.asarray(theta0, dtype=float), ceiling)
    for _ in range(int(steps)):
        _, g = rhip_objective(graph, theta, demos, H)
        theta = np.minimum(theta + lr * g / len(demos), ceiling)
    return theta


def layered_graph(mdp) -> RouteGraph:
    """A deterministic finite-horizon tabular model as a route graph: node ``h S + s`` per step
    and state, a sink ``H S``; edge ``(h S + s) A + a`` per step, state and action, to the
    successor (the sink after the last step); features one-hot per edge (``d = E = H S A``)."""
    S, A, H = mdp.S, mdp.A, int(mdp.horizon)
    P = np.asarray(mdp.dense_P())  # (S, A, S) or (H, S, A, S)
    P = np.broadcast_to(P, (H, S, A, S)) if P.ndim == 3 else P
    if not np.all((P == 0) | (P == 1)):
        raise ValueError(f"rhip needs deterministic transitions (a route graph); {mdp.name} "
                         "has stochastic ones")  # fmt: skip
    h, s, a = (x.ravel() for x in np.meshgrid(np.arange(H), np.arange(S), np.arange(A),
                                              indexing="ij"))  # fmt: skip
    nxt = P[h, s, a].argmax(axis=1)  # (E,)
    heads = np.where(h + 1 < H, (h + 1) * S + nxt, H * S)
    return RouteGraph(H * S + 1, h * S + s, heads, np.eye(H * S * A))


@register("rhip", kind="irl", problem="tabular", bounds=(), papers=("000#55",))
def fit_rhip_irl(
    mdp,
    expert,
    rounds: int,
    rngs,
    *,
    horizon: int | None = None,
    lr: float = 0.5,
) -> IRLRun:
    """RHIP on a deterministic finite-horizon model (see the module docstring): the layered
    route graph (:func:`layered_graph`), one projected gradient step on ``J_H`` per round from
    ``theta = -1``, and the Dijkstra (greedy) policy of the fitted reward as pi_t.

    expert: the demonstrations, ``(states, actions)`` ints ``(B, N, H)``.
    horizon: RHIP's H (0: the deterministic planner; None: MaxEnt IRL).
    lr: the gradient step (on the mean over demonstrations)."""
    g = layered_graph(mdp)
    S, A, H, T = mdp.S, mdp.A, int(mdp.horizon), int(rounds)
    states, actions = (np.asarray(x, dtype=np.int64) for x in expert)  # (B, N, H)
    if states.shape != actions.shape or states.ndim != 3 or states.shape[2] != H:
        raise ValueError(f"expert must be (states, actions) of shape (B, N, {H}), got "
                         f"{states.shape} and {actions.shape}")  # fmt: skip
    B, N = states.shape[:2]
    paths = (np.arange(H) * S + states) * A + actions  # (B, N, H) edge indices
    policies = np.zeros((B, T, H, S), dtype=np.int64)
    rewards = np.zeros((B, T, H, S, A))
    for b in range(B):
        theta = -np.ones(H * S * A)
        demos = list(paths[b])
        for t in range(T):
            _, grad = rhip_objective(g, theta, demos, horizon)
            theta = np.minimum(theta + lr * grad / N, -0.05)
            _, nxt = dijkstra(g, g.rewards(theta), H * S)
            policies[b, t] = (nxt[: H * S] % A).reshape(H, S)
            rewards[b, t] = theta.reshape(H, S, A)
    return IRLRun(
        policies=policies,
        rewards=rewards,
        inner_samples=np.zeros((B, T), dtype=np.int64),
        moment_samples=np.zeros((B, T), dtype=np.int64),
        moment_mask=np.ones(H, dtype=bool),
        expert_moments=empirical_occupancy(states, actions, S, A),
        config={"horizon": horizon, "lr": float(lr), "demos": int(N)},
    )
