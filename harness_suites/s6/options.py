"""S6's own options: the I/O workload beside the OLTP load, the mail workload's shape, its verdicts and its soak."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from harness.options import Declaration
from harness.run_options import Finite, checked, io_dir_of, profile_of


class Options(Declaration):
    io_profile: Annotated[str, checked(profile_of)] = Field(
        default="mail", description="S6: the I/O workload's fio profile (mail: 70/30 r/w, 32 KiB)")
    io_rate_iops: int = Field(default=1000, ge=0, le=10_000_000,
                              description="S6: the I/O workload's offered load (fio rate_iops; 0: as fast as it goes)")
    io_dir: Annotated[str, checked(io_dir_of)] | None = Field(
        default=None, description="S6: directory fio writes in (default on the lab: the primary site's storage); on a real "
                          "cluster, a disk of the same datastore mounted on this machine")
    mail_instances: int = Field(default=2, ge=1, le=64, description="S6: mail databases (each with its log) sharing "
                                                             "--io-rate-iops")
    mail_log_iops: int = Field(default=0, ge=0, le=10_000_000,
                               description="S6: log writes/s over all instances (0: a quarter of --io-rate-iops)")
    mail_db_read_ms: Finite | None = Field(
        default=None, gt=0, le=60_000,
        description="S6: judge the mail databases' average read latency against this (default: not judged)")
    mail_log_write_ms: Finite | None = Field(
        default=None, gt=0, le=60_000,
        description="S6: judge the mail logs' average write latency against this (default: not judged)")
    soak_s: Finite = Field(default=0.0, ge=0, le=7 * 86_400,
                           description="S6: an N-1 soak of the mail workload this long, one node down throughout "
                                       "(0: none)")
