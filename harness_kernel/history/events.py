"""The vocabulary of the history: every kind of event a role may write, and what it carries.

Writers (the runner, the experiment, workloads, cluster watchers) and readers (analysis,
plots, the fault record) meet only here. Each kind says who writes it and the attributes it
carries; a reader may rely on those attributes and on nothing else.
"""

from __future__ import annotations

import enum


class EventKind(enum.StrEnum):
    # -- the fault lifecycle (writer: harness.safety.runner; attrs: fault, target, params...) --
    INJECT = "inject"
    """The fault is about to be injected (its journal entry is already durable)."""
    IN_EFFECT = "in-effect"
    """The fault's check observed it in effect."""
    STOP_CONDITION = "stop-condition"
    """A guard tripped while the fault was in effect. attrs: guard, reason."""
    REVERT = "revert"
    """The revert starts."""
    REVERTED = "reverted"
    """The fault's check observed it cleared; its journal entry is gone."""
    REVERT_FAILED = "revert-failed"
    """The revert did not clear the fault; the journal keeps it. attrs: error."""

    # -- the experiment (writer: harness.experiment) ---------------------------------------
    BASELINE_START = "baseline-start"
    """The steady-load baseline window starts."""
    FAULT_ENDED = "fault-ended"
    """The observe window is over (the revert follows). attrs: fault, target."""
    HEALTHY = "healthy"
    """The cluster passed its preflight again after the revert."""
    RESYNC_DONE = "resync-done"
    """The control plane reported no bytes left to resynchronise."""
    FIRST_COMMIT = "first-commit"
    """The first acknowledged commit after the fault's outage (end of the outage's commit gap)."""
    OPERATION_DONE = "operation-done"
    """An operation under test (a backup) ended. attrs: fault, target, completed, bytes, seconds, error."""
    REDUCED_REDUNDANCY = "reduced-redundancy"
    """The data had fewer in-sync copies than before the fault, as the cluster's probe said. attrs: start, end
    (None: still reduced at the trial's end), fewest (None: no primary answered), promised, states (what the
    cluster said at the start), restored_states."""
    REPLICATION = "replication"
    """The replication mode the cluster said it ran with. attrs: when (at the experiment's start, before the fault,
    during the fault, after recovery), mode (synchronous, asynchronous, unknown; "restoring" while settings are put
    back), read_from (quoted), restored (the settings put back, if any)."""
    METRO = "metro"
    """What the storage (or the HA manager in its place) reported of a replicated group, recorded when it changed.
    attrs: source (the observer), group, replica, link, sites ({site: {serving, arbiter}}), preferred,
    rebuild_pct, rebuild_eta_s, words (the product's own states, as it said them)."""
    STEP_START = "step-start"
    """A measured step of a sweep starts. attrs: step (e.g. the RTT)."""
    STEP_END = "step-end"
    """A measured step of a sweep ends. attrs: step."""

    # -- the HA manager, aligned to the harness clock (writer: the cluster's ha_events) ---
    DETECTED = "detected"
    """The HA manager noticed the failure. attrs: description, node, and the manager's own fields."""
    PROMOTED = "promoted"
    """Another node became primary. attrs: description, node."""
    DATABASES_ONLINE = "databases-online"
    """Every database of the role is online on the new primary (SQL Server: each AG database changed
    role, error 1480 in AlwaysOn_health). attrs: description, node, databases."""
    LISTENER_ONLINE = "listener-online"
    """The role's client access point is online again (WSFC brought the AG's or FCI's role online,
    its listener / network name with it). attrs: description, role, node."""
    HOST_FAILED = "host-failed"
    """vSphere HA declared a host failed (DasHostFailedEvent). attrs: description, host."""
    VM_RESTARTED = "vm-restarted"
    """vSphere HA restarted a VM (com.vmware.vc.ha.VmRestartedByHAEvent). attrs: description, vm, host."""

    # -- workloads (writer: workloads.*) --------------------------------------------------
    WORKLOAD_START = "workload-start"
    """A workload starts. attrs: workload, and its own settings (users, mix, profile)."""
    WORKLOAD_STOP = "workload-stop"
    """A workload stops. attrs: stuck (users that did not stop), totals."""
    COMMIT_GAP = "commit-gap"
    """No commit for longer than the gap threshold. attrs: start, end (None: still open at stop),
    first_error (timeline time of the first failed transaction, or None), errors."""
    LEDGER_VERIFIED = "ledger-verified"
    """The commit ledger was checked against the database. attrs: acknowledged, lost, in_doubt."""
