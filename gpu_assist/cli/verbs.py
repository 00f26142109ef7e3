"""Every verb of the command line in a few words and a command line that works: what `--help` lists and what a bad
command line's error ends with. Apart from the parser, so a verb's words are read in one place."""

# Every verb in a few words, for `gpu-assist --help` and its own `--help`: first a user's, then an operator's or a
# catalog maintainer's (OPERATOR_VERBS), listed apart.
ABOUT = {
    "quote": "price a GPU job: gpu-assist quote 8xA100 72h",
    "recommend": "plan a workload: gpu-assist recommend train 7B tokens=20B deadline=72h",
    "tco": "buy or rent: gpu-assist tco 1xA100 hardware=100k ops=50k currency=CNY",
    "util": "GPU utilization: this machine (NVML), or the fleet: gpu-assist util fleet region=us-east-1",
    "launch": "ask to launch: gpu-assist launch 8xA100 72h spot --as alice",
    "stop": "ask to stop instances gpu-assist launched: gpu-assist stop i-… --as alice",
    "extend": "ask to move a running launch's time to live: gpu-assist extend r-… 24h",
    "spend": "what gpu-assist's launches cost: gpu-assist spend 2026-11 by=project",
    "commit": "reserved terms to buy, from the team's recorded launches: gpu-assist commit months=3",
    "requests": "recent requests, or one with its audit trail: requests show r-…",
    "help": "examples of every command",
    "approve": "operators only: approve with --break-glass (approvers decide in Slack or Jupyter)",
    "reject": "operators only: reject with --break-glass (approvers decide in Slack or Jupyter)",
    "reconcile": "finish requests a crash left half-done (no second launch)",
    "reap": "stop launches whose approved duration is over",
    "expire": "expire pending requests past their deadline",
    "db": "the request store's schema: db upgrade | db current",
    "slack": "run the Slack app: slack serve | slack socket",
    "metrics": "serve Prometheus metrics (GPUs, launches, spend): metrics serve --port 9400",
    "skypilot": "SkyPilot's admin policy (approvals and budgets for sky launch): skypilot serve --port 8765",
    "spot": "on a spot instance, act on its interruption warning: spot watch --on-warning CMD -- python train.py",
    "catalog": "validate, list, import and refresh the price catalogs",
}
OPERATOR_VERBS = ("approve", "reject", "reconcile", "reap", "expire", "db", "slack", "metrics", "skypilot", "catalog")
# A command line that works, for each verb: what a bad one's error ends with.
EXAMPLES = {
    "quote": "gpu-assist quote 8xA100 72h", "recommend": "gpu-assist recommend train 7B tokens=20B deadline=72h",
    "tco": "gpu-assist tco 1xA100 hardware=100k ops=50k currency=CNY",
    "util": "gpu-assist util fleet region=us-east-1", "launch": "gpu-assist launch 8xA100 72h spot --as alice",
    "stop": "gpu-assist stop i-0123456789abcdef0 --as alice",
    "extend": "gpu-assist extend r-0123456789ab 24h --as alice", "spend": "gpu-assist spend 2026-11 by=project",
    "commit": "gpu-assist commit months=3",
    "requests": "gpu-assist requests show r-0123456789ab", "help": "gpu-assist help",
    "approve": "gpu-assist approve r-0123456789ab --break-glass --reason INC-42",
    "reject": "gpu-assist reject r-0123456789ab --break-glass --reason INC-42", "reconcile": "gpu-assist reconcile",
    "reap": "gpu-assist reap", "expire": "gpu-assist expire", "db": "gpu-assist db upgrade",
    "slack": "gpu-assist slack serve --port 3000", "metrics": "gpu-assist metrics serve --port 9400",
    "skypilot": "gpu-assist skypilot serve --port 8765",
    "spot": "gpu-assist spot watch --on-warning 'touch /tmp/save-now' -- python train.py",
    "catalog": "gpu-assist catalog validate",
    "catalog refresh": "gpu-assist catalog refresh aws-public",
    "catalog import-skypilot": "gpu-assist catalog import-skypilot catalogs/sources --imported 2026-12-02",
    "catalog import-china": "gpu-assist catalog import-china catalogs/sources",
}
