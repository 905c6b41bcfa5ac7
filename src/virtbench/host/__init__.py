"""The host: processes, cgroups, sysctl, a run's on-host state (lock and ledger), host
facts, set-up and doctor."""
