"""Virtual environments per resolved `environment`, built with uv and kept by content hash.

`index.py`: where packages come from (the user's uv or pip configuration);
`pythons.py`: a version's interpreter where uv stopped at a shim that does not run;
`build.py`: the request, its hash, and building it once, atomically, under a lock;
`cache.py`: listing and pruning what is kept; `staging.py`: the folder builds
are made in, and what builds that never ended left there. This package's namespace is their API.
"""

from __future__ import annotations

from reprospec.venvs.build import (
    BUILD_LOG,
    ENVS_VARIABLE,
    FAILED,
    FORMAT,
    META,
    USED_BY,
    Env,
    EnvBuildError,
    EnvProgress,
    EnvProgressCallback,
    EnvRequest,
    Interpreter,
    build_failure_line,
    describe_request,
    ensure_env,
    env_request,
    envs_folder,
    failed_build_log,
    find_interpreter,
    hold,
    installed,
    intact_meta,
    read_meta,
    remembered_failures,
    request_for,
    shared_envs,
    uv_binary,
)
from reprospec.venvs.cache import (
    BuildRecord,
    EnvInfo,
    FailedLog,
    kept_in_use,
    list_build_records,
    list_envs,
    list_failed_logs,
    prune_build_records,
    prune_envs,
    prune_failed_logs,
    summarize,
)
from reprospec.venvs.index import IndexConfig, user_index_config
from reprospec.venvs.staging import LOCKS, TMP, Unfinished, list_unfinished, sweep_unfinished

__all__ = [
    "BUILD_LOG",
    "ENVS_VARIABLE",
    "FAILED",
    "FORMAT",
    "LOCKS",
    "META",
    "TMP",
    "USED_BY",
    "BuildRecord",
    "Env",
    "EnvBuildError",
    "EnvInfo",
    "EnvProgress",
    "EnvProgressCallback",
    "EnvRequest",
    "FailedLog",
    "IndexConfig",
    "Interpreter",
    "Unfinished",
    "build_failure_line",
    "describe_request",
    "ensure_env",
    "env_request",
    "envs_folder",
    "failed_build_log",
    "find_interpreter",
    "hold",
    "installed",
    "intact_meta",
    "kept_in_use",
    "list_build_records",
    "list_envs",
    "list_failed_logs",
    "list_unfinished",
    "prune_build_records",
    "prune_envs",
    "prune_failed_logs",
    "read_meta",
    "remembered_failures",
    "request_for",
    "shared_envs",
    "summarize",
    "sweep_unfinished",
    "user_index_config",
    "uv_binary",
]
