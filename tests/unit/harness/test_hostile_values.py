"""Hostile values, round two (review: shared/reviews/hostile-inputs.md): one spec per hole it found.

The threat model (README, "Safety"): the topology and the options may not make the harness run a
program of their choosing or act beyond the allow-list; they are trusted only to name targets.
Each test is named after the review's item it closes. Where the old behaviour could hurt this
machine (freezing a process tree, reading /dev/zero) the act runs in a child process with bounds.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from faults import registry, sections
from faults.base import FaultPlan, FaultSpec
from harness.options import read
from harness.topology_source import load_source
from harness_kernel.errors import ConfigError, TargetNotAllowedError
from harness_kernel.topology.loader import parse_topology
from harness_platforms.sqlserver.backup import remove_script
from harness_platforms.sqlserver.wsfc.faults import move_script
from harness_suites.s7.options import Options as S7Options
from tests.unit.harness_kernel.topology.topology_docs import example, set_at

ROOT = Path(__file__).parents[3]
FCI = "examples/stretched-fci.yaml"
CANARY = "S3cr3t-Canary-7Q"
PS_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"  # CharExtensions.IsSingleQuote (PowerShell's CharTraits.cs)


def refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_topology(doc, "t.yaml")
    return str(caught.value)


def dry_run(*args: str, env: dict[str, str] | None = None, suite: str = "harness_suites") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", suite, "--dry-run", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})})


def powershell_literals(script: str) -> tuple[list[str], str]:
    """PowerShell's reading of single-quoted strings (its tokenizer's rule, modelled here): every quote
    character it knows opens and closes one, and two in a row inside stand for one. Returns the
    literals' values and the script with each literal replaced by `<lit>` (what PowerShell runs)."""
    values, code, i = [], [], 0
    while i < len(script):
        if script[i] not in PS_SINGLE_QUOTES:
            code.append(script[i])
            i += 1
            continue
        i, value = i + 1, []
        while i < len(script):
            if script[i] in PS_SINGLE_QUOTES:
                if i + 1 < len(script) and script[i + 1] in PS_SINGLE_QUOTES:
                    value.append(script[i])
                    i += 2
                    continue
                break
            value.append(script[i])
            i += 1
        i += 1
        values.append("".join(value))
        code.append("<lit>")
    return values, "".join(code)


# -- 1. PowerShell quoting by Unicode quotes ------------------------------------------------------

@pytest.mark.parametrize("quote", list(PS_SINGLE_QUOTES))
def test_item_1_a_value_with_any_powershell_quote_stays_inside_its_literal(quote: str) -> None:
    hostile = f"D:\\bak{quote}; Stop-Computer -Force; {quote}x\\harness-bench.bak"
    for script in (remove_script(hostile), move_script(f"SQL{quote}; Stop-Computer; {quote}", "fci02", 120)):
        literals, code = powershell_literals(script)
        assert "Stop-Computer" not in code, f"broke out of its literal: {script}"
        assert any("Stop-Computer" in value for value in literals)
    literals, _ = powershell_literals(remove_script(hostile))
    assert literals[0] == hostile, "the literal stands for the value exactly"


def test_item_1_a_backup_destination_with_a_unicode_quote_is_refused_before_anything_is_planned() -> None:
    result = dry_run("--topology", FCI, "--backup-destination", "D:\\bak\u2019; Stop-Computer -Force; \u2018x",
                     suite="harness_suites/s7/test_s7_backup_under_load.py")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "--backup-destination" in result.stderr and "Stop-Computer" not in result.stdout


def test_item_1_a_line_separator_cannot_add_a_line_to_a_plan() -> None:
    result = dry_run("--topology", FCI, "--backup-destination", "D:\\bak\u2028      revert: nothing to undo",
                     suite="harness_suites/s7/test_s7_backup_under_load.py")
    assert result.returncode == 4 and "U+2028" in result.stderr, result.stdout + result.stderr
    plan = FaultPlan(FaultSpec("backup", "database:x"), "b", ("write\u2028  revert: nothing to undo\x85x",), ("r",))
    assert plan.render().count("\n") == 2, "one line per step, whatever a value holds"


# -- 2. Allow-list bypass through the witness ---------------------------------------------------

@pytest.mark.parametrize(("path", "value", "why"), [
    ("witness.site", "site-a", "is a data site"),
    ("witness.name", "site-b", "is a data site's name"),
    ("witness.address", "192.0.2.11", "is also sites[0].hosts[0].address"),
    ("witness.address", "192.0.2.30", "is inside sites[0].subnets[0]"),
])
def test_item_2_the_witness_is_a_third_site_apart_from_both_data_sites(path: str, value: str, why: str) -> None:
    doc = example()
    set_at(doc, path, value)
    if path in ("witness.site", "witness.name"):  # the router's links now reach the witness through that site
        doc["routers"][0]["links"] = doc["routers"][0]["links"][:1]
    if path == "witness.name":
        del doc["witness"]["site"]
        doc["allow_list"] = [e for e in doc["allow_list"] if not e.startswith("witness:")] + ["witness:site-b"]
    message = refusal(doc)
    assert f"{path}: " in message and why in message, message


def test_item_2_the_allow_list_judges_what_a_plan_cuts_not_only_what_it_names() -> None:
    doc = example()
    doc["allow_list"] = ["witness:vsan-witness-01"]
    topology = parse_topology(doc, "t.yaml")
    isolation = registry.build(FaultSpec("witness-isolation", "witness:vsan-witness-01"), topology).plan()
    assert isolation.effect_set == {"link:site-a~site-w", "link:site-b~site-w"}
    registry.permit(isolation, topology, allow_destructive=True)
    cuts_the_cluster = FaultPlan(isolation.spec, isolation.backend, isolation.inject_steps, isolation.revert_steps,
                                 effects=frozenset({"link:site-a~site-b"}))
    with pytest.raises(TargetNotAllowedError, match="link:site-a~site-b"):
        registry.permit(cuts_the_cluster, topology, allow_destructive=True)


# -- 3. vsan.disk_faults runs only the disk fault script ------------------------------------------

@pytest.mark.parametrize("line", [
    "rm -rf / --no-preserve-root @DEVICE@",
    "poweroff @DEVICE@",
    "env LD_PRELOAD=/var/tmp/x.so python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@",
    "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@\n",
    "python /tmp/vsanDiskFaultInjection.pyc -p -d @DEVICE@",
    "python /usr/lib/vmware/vsan/bin/../../../../tmp/x.pyc -p -d @DEVICE@",
    "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@ --exec=/bin/sh",
    "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d /dev/sda",
])
def test_item_3_a_disk_fault_line_names_the_script_under_vmwares_directory_and_its_flags_only(line: str) -> None:
    doc = example()
    doc["management"]["vsan"] = {"disk_faults": {"permanent": line}}
    with pytest.raises(ConfigError) as caught:  # the vsan platform's section refuses it, as a run reads the topology
        sections.check(parse_topology(doc, "t.yaml"))
    assert "t.yaml: management.vsan.disk_faults.permanent: " in str(caught.value)


def test_item_3_the_documented_lines_and_a_reordering_of_their_flags_are_accepted() -> None:
    doc = example()
    doc["management"]["vsan"] = {"disk_faults": {
        "transient": "python3 /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.py -d @DEVICE@ -r @SECONDS@ -t"}}
    parse_topology(doc, "t.yaml")


# -- 4. Any file as a pid file; a process that is not the declared one ----------------------------

@pytest.mark.parametrize("pidfile", ["/proc/1/stat", "/dev/zero", "/sys/kernel/uevent_seqnum"])
def test_item_4_a_pid_file_is_an_ordinary_file(pidfile: str) -> None:
    doc = example()
    doc["processes"][0]["pidfile"] = pidfile
    assert "processes[0].pidfile: " in refusal(doc)


def test_item_4_a_process_declares_its_executable() -> None:
    doc = example()
    del doc["processes"][0]["executable"]
    assert "processes[0].executable: Field required" in refusal(doc)


BOUNDED_READ = """
import resource, sys
from pathlib import Path
from harness_kernel import procs
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
try:
    print(procs.read_pidfile(Path(sys.argv[1])))
except Exception as exc:
    print(type(exc).__name__)
"""


@pytest.mark.parametrize("path", ["/dev/zero", "/proc/1/stat"])
def test_item_4_a_pid_file_is_read_with_a_bound_and_never_names_init(path: str) -> None:
    done = subprocess.run([sys.executable, "-c", BOUNDED_READ, path], capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert done.stdout.strip() == "NotAPidFile", done.stdout + done.stderr


FREEZE_ONESELF = """
import os, sys
from pathlib import Path
from faults.backends.process import ProcessFreeze
from faults.base import FaultSpec
pidfile = Path(sys.argv[1])
pidfile.write_text(f"{os.getpid()}\\n")
fault = ProcessFreeze(FaultSpec("process-freeze", "process:x"), pidfile, *sys.argv[2:])
try:
    fault.inject()
    print("frozen")
except Exception as exc:
    print("refused:", exc)
"""


def test_item_4_the_harness_never_freezes_itself_or_a_process_that_runs_another_program(tmp_path: Path) -> None:
    """The child declares itself as the target, as a pid file naming the harness would."""
    child = subprocess.Popen([sys.executable, "-c", FREEZE_ONESELF, str(tmp_path / "p.pid"), sys.executable],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        out, _ = child.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(child.pid, 18)  # SIGCONT: the old code froze its own tree
        child.kill()
        pytest.fail("the process froze itself")
    assert out.startswith("refused:") and "harness" in out, out


def test_item_4_a_pid_file_naming_another_program_freezes_nothing(tmp_path: Path, victim: Any) -> None:
    from faults.backends.process import ProcessFreeze

    fault = ProcessFreeze(FaultSpec("process-freeze", "process:victim"), victim.pidfile, "/usr/bin/sleep")
    with pytest.raises(ConfigError, match="not /usr/bin/sleep"):
        fault.inject()
    assert victim.running()


# -- 4b. --io-dir reaches fio's job file ----------------------------------------------------------

def test_item_4b_a_newline_in_a_fio_job_value_never_becomes_a_line_of_its_own(tmp_path: Path) -> None:
    from workloads.fio import PROFILES, FioJob

    job = FioJob(PROFILES["mail"], Path(f"{tmp_path}/d\nexec_prerun=touch {tmp_path}/pwned"))
    with pytest.raises(ValueError, match="fio job path"):
        text = job.text(tmp_path / "log")
        assert "\nexec_prerun=" not in text


def test_item_4b_io_dir_is_refused_before_anything_runs() -> None:
    result = dry_run("--topology", "examples/stretched-2plus2.yaml", "--io-dir", "/tmp/d\nexec_prerun=id")
    assert result.returncode == 4 and "--io-dir" in result.stderr, result.stdout + result.stderr


# -- 5. Addresses written another way -------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["0xc0000214", "192.0.2.0x14", "0300.0.2.0xb", "::ffff:192.0.2.20", "0x7f000001"])
def test_item_5_an_address_in_a_non_canonical_spelling_is_refused(spelling: str) -> None:
    doc = example()
    doc["management"]["vcenter"]["address"] = spelling
    assert "management.vcenter.address: " in refusal(doc)


# -- 6. Oversized or special subnets and addresses -------------------------------------------------

@pytest.mark.parametrize("subnet", ["0.0.0.0/1", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32",
                                    "0.0.0.0/8", "198.18.0.0/15"])
def test_item_6_a_site_subnet_is_neither_special_nor_wider_than_the_bound(subnet: str) -> None:
    doc = example()
    doc["sites"][1]["subnets"] = [subnet]
    assert "sites[1].subnets[0]: " in refusal(doc)


def test_item_6_only_the_command_line_widens_the_bound() -> None:
    doc = example()
    doc["sites"][1]["subnets"] = ["198.18.0.0/15"]
    assert parse_topology(doc, "t.yaml", widest_site_prefix=15).sites[1].subnets == ["198.18.0.0/15"]
    doc["widest_site_subnet"] = 15
    assert "widest_site_subnet: unknown field" in refusal(doc)


@pytest.mark.parametrize("address", ["169.254.169.254", "0.0.0.0", "::", "255.255.255.255", "224.0.0.1", "fe80::1"])
def test_item_6_an_endpoint_is_one_host(address: str) -> None:
    doc = example()
    doc["management"]["redfish"][0]["address"] = address
    assert "management.redfish[0].address: " in refusal(doc)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "192.0.2.211", "2001:db8::211", "bmc-a1.example.net"])
def test_item_6_a_loopback_tunnel_and_ordinary_hosts_stay_endpoints(address: str) -> None:
    doc = example()
    doc["management"]["redfish"][0]["address"] = address
    assert parse_topology(doc, "t.yaml").management.redfish[0].address == address


def test_item_6_two_hosts_never_share_a_bmc() -> None:
    doc = example()
    doc["management"]["redfish"][1]["address"] = doc["management"]["redfish"][0]["address"]
    assert "one BMC per host" in refusal(doc)
    doc = example()
    doc["sites"][0]["hosts"][1]["bmc"] = doc["sites"][0]["hosts"][0]["bmc"]
    assert "sites[0].hosts[1].bmc: " in refusal(doc)


# -- 7. Secrets that stall or crash ---------------------------------------------------------------

LONG_SECRET = """
import resource
from harness_kernel.redaction import Redactor
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
secret = "".join(chr(33 + (i * 7919) % 90) for i in range(10_000))
masker = Redactor([secret], ["harness"])
print(masker.mask("x" + secret + "y " + secret[:500] + "...") == "x***y ***...")
"""


def test_item_7_a_ten_thousand_character_secret_is_masked_without_running_out_of_memory() -> None:
    done = subprocess.run([sys.executable, "-c", LONG_SECRET], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "True", done.stdout + done.stderr[-2000:]


# -- 8. Quadratic topology checks -----------------------------------------------------------------

def test_item_8_a_site_lists_at_most_4096_subnets() -> None:
    doc = example()
    doc["sites"][1]["subnets"] = [f"198.{18 + i // 65536}.{i // 256 % 256}.{i % 256}/32" for i in range(4097)]
    assert "sites[1].subnets: List should have at most 4096 items" in refusal(doc)


def test_item_8_overlaps_found_in_one_pass_are_the_overlaps_of_every_pair() -> None:
    """The linear check against the obvious one, on nested and disjoint blocks of three sites."""
    import ipaddress
    import random

    rng = random.Random(8)
    for _ in range(200):
        doc = copy.deepcopy(example())
        del doc["witness"], doc["routers"]
        doc["allow_list"] = [e for e in doc["allow_list"] if not e.startswith(("witness:", "link:"))]
        doc["management"]["redfish"] = doc["management"]["ssh"] = []
        doc["management"].pop("vcenter")
        for site in doc["sites"]:
            for host in site["hosts"]:
                host.pop("bmc", None)
                host.pop("ssh", None)
        doc["sites"].append({"name": "site-c", "hosts": [{"name": "esx-c1", "address": "198.51.100.5"}]})
        for site in doc["sites"]:
            site["subnets"] = sorted({f"198.{18 + rng.randrange(2)}.{rng.choice([0, 64, 128])}.0/{rng.choice([17, 24, 26])}"
                                      for _ in range(rng.randrange(4))})
            site["subnets"] = [str(ipaddress.ip_network(s, strict=False)) for s in site["subnets"]]
        networks = [(si, ipaddress.ip_network(n)) for si, s in enumerate(doc["sites"]) for n in s["subnets"]]
        crossing = any(a[0] != b[0] and a[1].overlaps(b[1]) for i, a in enumerate(networks) for b in networks[i + 1:])
        try:
            parse_topology(doc, "t.yaml")
            refused = ""
        except ConfigError as exc:
            refused = str(exc)
        assert ("overlaps" in refused) == crossing, (doc["sites"], refused)


# -- 9. Names that differ only in case --------------------------------------------------------------

@pytest.mark.parametrize(("path", "value"), [("databases[0].nodes[1].name", "SQL01"),
                                             ("sites[0].hosts[1].name", "ESX-A1")])
def test_item_9_names_that_differ_only_in_case_are_one_name(path: str, value: str) -> None:
    doc = example()
    set_at(doc, path, value)
    message = refusal(doc)
    assert f"{path}: {value!r} is used twice" in message, message


# -- 10. A pasted password echoed back --------------------------------------------------------------

@pytest.mark.parametrize("reference", [{"env": CANARY}, {"keyring": {"service": f"x{CANARY}\n", "username": "u"}}])
def test_item_10_a_secret_pasted_as_a_reference_is_never_echoed_by_a_refusal(reference: dict[str, Any]) -> None:
    doc = example()
    doc["databases"][0]["credential"]["password"] = reference
    message = refusal(doc)
    assert "databases[0].credential.password." in message and CANARY not in message, message


def test_item_10_nor_by_the_dry_runs_list_of_missing_credentials(tmp_path: Path) -> None:
    pasted = CANARY.replace("-", "_")  # a valid variable name, unset
    text = (ROOT / FCI).read_text().replace("{env: HARNESS_SQL_PASSWORD}", f"{{env: {pasted}}}")
    assert pasted in text
    (tmp_path / "t.yaml").write_text(text)
    result = dry_run("--topology", str(tmp_path / "t.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "credentials missing for a real run" in result.stdout and pasted not in result.stdout + result.stderr


# -- every command-line value, checked before anything runs and shown in the plan -------------------

@pytest.mark.parametrize(("option", "value"), [
    ("--observe-s", "-1"), ("--users", "-1"), ("--rtt-steps", "nan"), ("--rtt-steps", "0,inf"),
    ("--rtt-steps", "4;id"), ("--migration-rtt-steps", "-4"), ("--io-rate-iops", "-5"),
    ("--recover-timeout-s", "nan"), ("--backup-rates", "4M;id"),
    ("--backup-destination", f"https://harness:{CANARY}@acct.blob.core.windows.net/c"),
    ("--backup-destination", f"https://acct.blob.core.windows.net/c?sv=2022&sig={CANARY}"),
    ("--restore-destination", "/srv/copy\u2019; rm -rf /; \u2018x"),
])
def test_every_option_value_is_checked_before_anything_runs(option: str, value: str) -> None:
    result = dry_run("--topology", "examples/stretched-2plus2.yaml", option, value)
    assert result.returncode == 4, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"ERROR: {option}: "), result.stderr
    assert CANARY not in result.stdout + result.stderr


def test_the_dry_run_shows_the_options_and_plans_each_step_of_a_sweep() -> None:
    result = dry_run("--topology", "examples/stretched-2plus2.yaml", "--rtt-steps", "0,3,7",
                     suite="harness_suites/s1/test_s1_latency_sweep.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--rtt-steps=0,3,7" in result.stdout
    assert "params: rtt_ms=3.0" in result.stdout and "params: rtt_ms=7.0" in result.stdout
    assert "rtt_ms=4.0" not in result.stdout


# -- lower-severity notes ---------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["lab:AB", "lab:$(touch /tmp/x)"])
def test_a_bad_lab_prefix_is_one_line_not_a_traceback(source: str) -> None:
    result = dry_run("--topology", source)
    assert result.returncode == 4 and "Traceback" not in result.stderr, result.stderr
    assert "a lab prefix is 2-8 lower-case letters" in result.stderr


def test_basic_over_http_to_another_machine_is_refused_at_load() -> None:
    doc = example()
    doc["management"]["winrm"] = [{"name": "w", "address": "192.0.2.250", "scheme": "http", "transport": "basic",
                                   "credential": {"username": "u", "password": {"env": "X"}}}]
    assert "management.winrm[0]: " in refusal(doc) and "readable" in refusal(doc)


def test_an_ssh_endpoint_without_key_or_password_is_refused_at_load() -> None:
    doc = example()
    del doc["management"]["ssh"][0]["key_file"]
    assert "management.ssh[0]: " in refusal(doc)


def test_query_timeout_is_a_number_not_a_string_or_a_boolean() -> None:
    for value in ("10", True):
        doc = example()
        doc["databases"][0]["query_timeout_s"] = value
        assert "databases[0].query_timeout_s: " in refusal(doc)


PROBE = """#!/bin/sh
touch "$(dirname "$0")/ran-$(basename "$0")"
exit 1
"""


def test_a_dry_run_with_keyring_references_runs_no_program(tmp_path: Path) -> None:
    """keyring's backends probe the machine (ldconfig, a compiler) when opened; the dry-run never opens it."""
    probes = tmp_path / "bin"
    probes.mkdir()
    for name in ("ldconfig", "gcc", "cc", "ld", "x86_64-linux-gnu-gcc", "objdump"):
        (probes / name).write_text(PROBE)
        (probes / name).chmod(0o755)
    result = dry_run("--topology", "examples/stretched-2plus2.yaml", env={"PATH": f"{probes}:/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a keyring reference, not looked up by a dry-run" in result.stdout
    assert sorted(p.name for p in probes.glob("ran-*")) == []


REFUSED_LOGIN = textwrap.dedent("""\
    from harness_kernel.errors import CredentialRejectedError

    def test_login():
        raise CredentialRejectedError("bmc x: login refused (management.redfish[0].credential)")
    """)


def test_a_rejected_credential_exits_4_bad_input(tmp_path: Path) -> None:
    (tmp_path / "test_login.py").write_text(REFUSED_LOGIN)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin",
                           str(tmp_path / "test_login.py"), "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 4, done.stdout + done.stderr
    assert re.search(r"1 error", done.stdout)


# -- Hostile values on the newest surfaces: refused at load, naming the file and the field ------------

METRO, NUTANIX = "examples/stretched-metro-vplex.yaml", "examples/nutanix-ahv-esrp.yaml"
PLATFORM_EXAMPLES = {"vplex": METRO, "nutanix": NUTANIX}


def platform_file(tmp_path: Path, platform: str, field: str, value: Any) -> Path:
    """The platform's shipped example with one field of its section changed, written where `load_source` reads it."""
    doc = yaml.safe_load((ROOT / PLATFORM_EXAMPLES[platform]).read_text())
    doc["management"]["platforms"][platform][field] = value
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def load_refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_source(path)
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    return message


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("platform", ["vplex", "nutanix"])
@pytest.mark.parametrize(("field", "where"), [("endpoint", "endpoint"), ("fallback_endpoints", "fallback_endpoints[0]")])
@pytest.mark.parametrize("url", ["https://169.254.169.254", "https://169.254.0.1:9440", "https://[fe80::1]",
                                 "https://[fe80::a:b]:9440", "https://[::ffff:169.254.169.254]", "https://0xa9fea9fe"])
def test_x7_a_rest_endpoint_at_a_link_local_address_is_refused_at_load_naming_the_file_and_the_field(
        tmp_path: Path, platform: str, field: str, where: str, url: str) -> None:
    """Basic credentials go to every call: the cloud's metadata service (169.254.169.254) must never be one."""
    path = platform_file(tmp_path, platform, field, [url] if field == "fallback_endpoints" else url)
    message = load_refusal(path)
    assert message.startswith(f"{path}: management.platforms.{platform}.{where}: "), message


@pytest.mark.parametrize("platform", ["vplex", "nutanix"])
@pytest.mark.parametrize("url", ["http://127.0.0.1:8443", "https://127.0.0.1", "http://[::1]:9440", "http://localhost:9"])
def test_x7_a_rest_endpoint_on_this_machine_stays_allowed_for_the_contract_stand_ins(
        tmp_path: Path, platform: str, url: str) -> None:
    load_source(platform_file(tmp_path, platform, "endpoint", url))


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("platform", ["vplex", "nutanix"])
def test_x7_every_refusal_of_a_platform_section_names_the_topology_file(tmp_path: Path, platform: str) -> None:
    """As the core sections' do: the reader goes to the file, not to a topology's name."""
    path = platform_file(tmp_path, platform, "endpoint", "ftp://192.0.2.150")
    assert load_refusal(path).startswith(f"{path}: management.platforms.{platform}.endpoint: ")


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("name", ["master", "model", "msdb", "tempdb", "MASTER", "TempDB", "MsDb", "bench", "BENCH"])
def test_x7_restore_as_names_a_scratch_database_never_a_system_one_or_the_database_itself(name: str) -> None:
    doc = example()
    assert doc["databases"][0]["database"] == "bench"
    doc["databases"][0]["restore_as"] = name
    message = refusal(doc)
    assert message.startswith("t.yaml: databases[0].restore_as: "), message


def test_x7_restore_as_may_be_any_other_name() -> None:
    doc = example()
    doc["databases"][0]["restore_as"] = "bench_restore_test"
    assert parse_topology(doc, "t.yaml").databases[0].restore_as == "bench_restore_test"


def read_restore_destination(pytestconfig: pytest.Config, value: str) -> S7Options:
    """S7's options as its suite reads them, `--restore-destination` given and the rest at their defaults."""
    return read(S7Options, lambda name: value if name == "--restore-destination" else None)


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("destination", [
    "/", "//", "/etc", "/etc/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/dev", "/proc", "/sys", "/var",
    "/root", "/run", "/proc/self", "/dev/shm/copy", "/sys/fs", "/srv/../etc", "/./etc",
    "restore", "./restore", "srv/restore", "C:", "C:restore", "\\Restore",
    "C:\\", "c:\\", "D:/", "C:\\Windows", "C:\\WINDOWS\\Temp", "c:/windows/system32", "\\\\.\\PhysicalDrive0",
    "\\\\?\\C:\\Restore", "R:\\Restore\\..\\..\\Windows",
])
def test_x7_a_restore_destination_wrong_for_every_engine_is_refused_when_the_options_are_read(
        pytestconfig: pytest.Config, destination: str) -> None:
    with pytest.raises(ConfigError) as caught:
        read_restore_destination(pytestconfig, destination)
    assert str(caught.value).startswith("--restore-destination: "), caught.value


@pytest.mark.parametrize("destination", ["/srv/restore", "/var/lib/postgresql/restore", "/usr/local/pgsql/copy",
                                         "D:\\Restore", "R:\\SQL\\Restore", "\\\\fileserver\\restore\\sql"])
def test_x7_a_restore_destination_right_for_some_engine_is_left_to_where_the_engine_is_known(
        pytestconfig: pytest.Config, destination: str) -> None:
    assert read_restore_destination(pytestconfig, destination).restore_destination == destination


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize(("topology", "destination", "said"), [
    (FCI, "/srv/restore", "SQL Server"),  # a POSIX path on the Windows server
    ("examples/stretched-2plus2.yaml", "/", "--restore-destination: '/'"),
    ("lab", "D:\\Restore", "PostgreSQL"),  # a Windows path on this (Linux) machine
])
def test_x7_a_restore_destination_wrong_for_the_topologys_engine_stops_the_dry_run(
        topology: str, destination: str, said: str) -> None:
    result = dry_run("--topology", topology, "--restore-destination", destination,
                     suite="harness_suites/s7/test_s7_backup_under_load.py")
    assert result.returncode == 4, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ERROR: --restore-destination: ") and said in last, result.stderr


SPECIAL_FILES = ["/proc/self/environ", "/proc/1/stat", "/dev/zero", "/dev/stdin", "/sys/kernel/uevent_seqnum",
                 "/proc/nonexistent-but-still-proc"]


def special_files(tmp_path: Path) -> list[str]:
    """Paths of the kernel's, and things on disk that exist but are no regular file (read, they never end or say
    nothing a CA would)."""
    (tmp_path / "to-environ").symlink_to("/proc/self/environ")
    (tmp_path / "to-zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    return [*SPECIAL_FILES, *(str(tmp_path / n) for n in ("to-environ", "to-zero", "fifo", "dir"))]


@pytest.mark.reproducer("X-7")
def test_x7_a_vcenter_ca_file_is_an_ordinary_file(tmp_path: Path) -> None:
    for path in special_files(tmp_path):
        doc = example()
        doc["management"]["vcenter"]["tls"] = {"ca_file": path}
        message = refusal(doc)
        assert message.startswith("t.yaml: management.vcenter.tls.ca_file: "), (path, message)


def test_x7_a_vcenter_ca_file_not_there_yet_is_still_accepted_at_load() -> None:
    """As before: a plan is made on a laptop; the transport says at connect time that the file cannot be loaded."""
    doc = example()
    doc["management"]["vcenter"]["tls"] = {"ca_file": "/nonexistent/ca.pem"}
    vcenter = parse_topology(doc, "t.yaml").management.vcenter
    assert vcenter is not None and vcenter.tls.ca_file == "/nonexistent/ca.pem"


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("platform", ["vplex", "nutanix"])
def test_x7_a_platforms_ca_file_is_an_ordinary_file(tmp_path: Path, platform: str) -> None:
    (tmp_path / "made").mkdir()
    for special in special_files(tmp_path / "made"):
        message = load_refusal(platform_file(tmp_path, platform, "ca_file", special))
        assert message.startswith(f"{tmp_path / 'hostile.yaml'}: management.platforms.{platform}.ca_file: "), message


@pytest.mark.parametrize("platform", ["vplex", "nutanix"])
def test_x7_a_platforms_ca_file_not_there_is_left_to_the_preflight(tmp_path: Path, platform: str) -> None:
    """A plan must still be made on a laptop that has none of the cluster's files."""
    load_source(platform_file(tmp_path, platform, "ca_file", "/etc/harness/not-here-ca.pem"))
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    load_source(platform_file(tmp_path, platform, "ca_file", str(tmp_path / "ca.pem")))


@pytest.mark.reproducer("X-7")
@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.53", "127.255.255.254"])
def test_x7_the_witness_is_never_this_machine(address: str) -> None:
    """The router drops the witness's address to isolate it: at loopback that would cut the router off itself."""
    doc = example()
    doc["witness"]["address"] = address
    message = refusal(doc)
    assert message.startswith("t.yaml: witness.address: ") and "loopback" in message, message


def test_x7_a_site_hosts_address_at_loopback_is_kept_for_no_fault_acts_on_it() -> None:
    """vCenter's simulator reports its hosts' management VMkernel address as 127.0.0.1, and a host's faults act through
    its management endpoints (vCenter, BMC, ESXi shell), never its address: only the witness's address is dropped."""
    doc = example()
    for site in doc["sites"]:
        for host in site["hosts"]:
            host["address"] = "127.0.0.1"
    assert {h.address for h in parse_topology(doc, "t.yaml").hosts()} == {"127.0.0.1"}
