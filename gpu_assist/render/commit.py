"""Commitment advice (`gpu_assist.team.commitments`) in words and rows: the text every face shows, the rows JSON, CSV
and the notebook's DataFrame share, and the notebook's coverage-versus-cost chart (HTML bars, no plotting
dependency)."""

from __future__ import annotations

import html
from decimal import Decimal
from functools import partial
from typing import Any

from ..plural import plural
from ..team.commitments import CommitmentAdvice, UsageGroup, monthly_bills
from .comparison import wrap
from .money import format_money, format_percent, round_money
from .notes import words
from .tables import text_table


def commitment_rows(advice: CommitmentAdvice) -> list[dict[str, Any]]:
    """One row per instance type, region and term: its figures, whether it is recommended, and why not."""
    rows = []
    for group in advice.groups:
        for c in group.candidates:
            rows.append({
                "provider": group.provider, "instance_type": group.instance_type, "region": group.region,
                "term": str(c.model), "rate_per_hour": round_money(c.rate, 6),
                "paid_per_hour": round_money(c.paid_rate, 6), "break_even_utilisation": round_money(c.break_even, 4),
                "lowest_month_hours": float(group.lowest_hours), "instances": c.instances,
                "commitment_per_month": round_money(c.per_month, 2),
                "saving_per_month": round_money(c.saving_per_month, 2),
                "unused_hours_lowest_month": float(round(c.unused_hours, 1)),
                "unused_cost_lowest_month": round_money(c.unused_cost, 2), "currency": advice.currency,
                "recommended": c.recommended, "why_not": "; ".join(words(reason) for reason in c.reasons),
                "price_source": c.source, "price_as_of": c.as_of})
    return rows


def _group_lines(group: UsageGroup, currency: str) -> list[str]:
    money = partial(format_money, currency=currency)
    used = " / ".join(f"{month.hours:,.0f}" for month in group.months)
    lines = wrap(f"{group.instance_type} in {group.region} ({group.provider}): {used} instance-hours a month, "
                 f"{money(group.paid_per_month)} a month paid as you go")
    rows = [[f"{c.model}{' *' if c.recommended else ''}", f"{money(c.rate)}/h", format_percent(c.break_even),
             str(c.instances), money(c.per_month), money(c.saving_per_month), f"{c.unused_hours:,.0f} h",
             f"{c.source} {c.as_of or 'date unknown'}"] for c in group.candidates]
    if rows:
        table = text_table(["term", "rate", "break-even", "buy", "per month", "saves/month", "unused", "price from"],
                           rows, right={1, 2, 3, 4, 5, 6}, clip={7: 30})
        lines += ["  " + line for line in table.splitlines()]
    for c in group.candidates:
        lines += [line for reason in c.reasons for line in wrap(f"  {c.model}: {words(reason)}", "    ")]
    lines += [line for missing in group.missing for line in wrap(f"  {words(missing)}", "    ")]
    return lines


def render_commitments(advice: CommitmentAdvice) -> str:
    if not advice.groups:
        return "\n".join(wrap("no commitment to recommend: " + "; ".join(words(n) for n in advice.notices)))
    first, last = advice.months[0], advice.months[-1]
    lines = wrap(f"commitments from {plural(len(advice.months), 'whole month')} of launches ({first:%Y-%m} to "
                 f"{last:%Y-%m}), in {advice.currency}; a committed instance is paid 730 h a month")
    lines += [line for notice in advice.notices for line in wrap(words(notice))]
    for group in advice.groups:
        lines += ["", *_group_lines(group, advice.currency)]
    lines += ["", *wrap("* recommended. buy: instances to commit, the count that saves most without costing more "
                        "than paying as you go in the lowest month (a row of 0 shows what 1 would do); unused: "
                        "committed hours left idle if use fell to the lowest month"), ""]
    if advice.recommended:
        for group, c in advice.recommended:
            lines += wrap(f"recommended: {c.instances}× {group.instance_type} {c.model} in {group.region}, saving "
                          f"{format_money(c.saving_per_month, advice.currency)} a month on the history's use; "
                          f"{c.unused_hours:,.0f} h paid unused if use falls to the lowest month")
    else:
        lines += wrap("recommended: none; keep paying as you go (why, under each type)")
    return "\n".join(lines)


def coverage_costs(group: UsageGroup, candidate_index: int = 0) -> list[tuple[int, Decimal]]:
    """(instances committed, average monthly cost) from 0 up to two past the recommended count: the curve a
    commitment's chart draws."""
    c = group.candidates[candidate_index]
    top = max(c.instances, 1) + 2
    costs = []
    for k in range(top + 1):
        bills = monthly_bills(group.months, k, c.rate, c.paid_rate)
        costs.append((k, sum(bills, Decimal(0)) / len(bills)))
    return costs


def coverage_chart(group: UsageGroup, currency: str, candidate_index: int = 0) -> str:
    """HTML bars: the average monthly cost at each number of committed instances; the cheapest bar green."""
    costs = coverage_costs(group, candidate_index)
    scale = max(cost for _, cost in costs) or Decimal(1)
    cheapest = min(costs, key=lambda pair: pair[1])[0]
    term = group.candidates[candidate_index].model
    rows = [f'<div style="font-size:12px;font-weight:600">{html.escape(group.instance_type)} in '
            f'{html.escape(group.region)}: monthly cost by {html.escape(str(term))} instances committed</div>']
    for k, cost in costs:
        color = "#2e7d32" if k == cheapest else "#1976d2"
        rows.append(f'<div style="display:flex;align-items:center;gap:6px;font-size:12px">'
                    f'<span style="width:7em">{k} committed</span>'
                    f'<span style="width:50%;height:12px"><span style="display:block;background:{color};height:10px;'
                    f'width:{float(100 * cost / scale):.1f}%"></span></span>'
                    f'<span>{html.escape(format_money(cost, currency))}/month</span></div>')
    return '<div class="gpu-assist-commit">' + "".join(rows) + "</div>"
