"""The store's schema comes from the Alembic migrations: exactly the tables the code models, the state and kind
CHECKs, the append-only audit trigger, one audit row per delivery, on SQLite and PostgreSQL; upgrading is
idempotent and serialised."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import sqlalchemy
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from gpu_assist.store import Store, audit_table, metadata, requests_table, schema


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_engine(request, tmp_path):
    if request.param == "sqlite":
        engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    else:
        url = request.getfixturevalue("postgres_url")
        admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sqlalchemy.text("DROP DATABASE IF EXISTS schema_test WITH (FORCE)"))
            connection.execute(sqlalchemy.text("CREATE DATABASE schema_test"))
        admin.dispose()
        engine = sqlalchemy.create_engine(url.rsplit("/", 1)[0] + "/schema_test")
    yield engine
    engine.dispose()


def test_the_migrations_make_exactly_the_modelled_schema(fresh_engine):
    assert schema.current(fresh_engine) is None
    assert schema.upgrade(fresh_engine) == schema.head() == "0008"
    with fresh_engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
        inspector = sqlalchemy.inspect(connection)
        checks = {c["name"]: c["sqltext"] for c in inspector.get_check_constraints("requests")}
        indexes = {i["name"] for t in ("requests", "audit_events") for i in inspector.get_indexes(t)}
    assert differences == []
    assert set(checks) == {"request_state_known", "request_kind_known"}
    assert "'stopping'" in checks["request_state_known"] and "'extended'" in checks["request_state_known"]
    assert "'extend'" in checks["request_kind_known"]
    assert indexes == {"ix_requests_state", "ix_audit_events_request_id", "ix_audit_events_delivery"}
    store = Store(engine=fresh_engine)
    with pytest.raises(sqlalchemy.exc.IntegrityError):  # the state CHECK holds
        with fresh_engine.begin() as connection:
            connection.execute(sqlalchemy.text(
                "INSERT INTO requests (id, kind, requester, spec, currency, state, created_at, expires_at, "
                "instance_ids, version) VALUES ('r-1', 'launch', 'x', '{}', 'USD', 'bogus', :t, :t, '[]', 0)"),
                {"t": "2026-12-03 00:00:00"})
    store.audit(None, "slack:U1", "submit launch", "refused", now=_now())
    store.audit(None, "slack:U1", "submit launch", "refused", now=_now())  # no delivery: as many as happen
    store.audit(None, "slack:U2", "approve", "refused", now=_now(), delivery="click-1")
    with pytest.raises(sqlalchemy.exc.IntegrityError):  # one row per delivery, whatever writes it
        with fresh_engine.begin() as connection:
            connection.execute(audit_table.insert().values(at=_now(), actor="slack:U2", action="approve",
                                                           outcome="ok", detail="", delivery="click-1"))
    for statement in ("UPDATE audit_events SET actor = 'someone else'", "DELETE FROM audit_events"):
        with pytest.raises(sqlalchemy.exc.DatabaseError, match="append-only"):
            with fresh_engine.begin() as connection:
                connection.execute(sqlalchemy.text(statement))
    assert schema.upgrade(fresh_engine) == "0008"  # idempotent
    assert [e.actor for e in store.audit_trail()] == ["slack:U1", "slack:U1", "slack:U2"]


def test_going_below_0007_drops_the_deliveries_and_keeps_the_log_append_only(fresh_engine):
    from alembic import command

    schema.upgrade(fresh_engine)
    Store(engine=fresh_engine).audit(None, "slack:U2", "approve", "refused", now=_now(), delivery="click-1")
    with fresh_engine.begin() as connection:
        command.downgrade(schema._config(connection), "0006")
    with fresh_engine.connect() as connection:
        columns = {c["name"] for c in sqlalchemy.inspect(connection).get_columns("audit_events")}
        assert connection.execute(sqlalchemy.text("SELECT actor FROM audit_events")).scalars().all() == ["slack:U2"]
    assert "delivery" not in columns and schema.current(fresh_engine) == "0006"
    with pytest.raises(sqlalchemy.exc.DatabaseError, match="append-only"):
        with fresh_engine.begin() as connection:
            connection.execute(sqlalchemy.text("DELETE FROM audit_events"))
    assert schema.upgrade(fresh_engine) == "0008"
    assert [e.actor for e in Store(engine=fresh_engine).audit_trail()] == ["slack:U2"]


def test_a_store_made_before_migrations_is_stamped_then_kept(tmp_path):
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    _first_revision_metadata().create_all(engine)  # how gpu-assist made its schema before the migrations
    with engine.begin() as connection:
        connection.execute(audit_table.insert().values(at=_now(), actor="U-OLD", action="submit", outcome="ok",
                                                       detail=""))
    assert schema.current(engine) is None
    assert schema.upgrade(engine) == "0008"
    assert [e.actor for e in Store(engine=engine).audit_trail()] == ["U-OLD"]
    assert requests_table.name in sqlalchemy.inspect(engine).get_table_names()


def test_processes_upgrading_one_fresh_postgres_at_once_take_turns(postgres_url):
    admin = sqlalchemy.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sqlalchemy.text("DROP DATABASE IF EXISTS upgrade_race WITH (FORCE)"))
        connection.execute(sqlalchemy.text("CREATE DATABASE upgrade_race"))
    admin.dispose()
    url = postgres_url.rsplit("/", 1)[0] + "/upgrade_race"
    gate = threading.Barrier(4)
    code = ("import sys; from gpu_assist.store import Store; from gpu_assist.store import schema; "
            "print(schema.current(Store(sys.argv[1]).engine))")
    results = []

    def upgrade():
        gate.wait()
        results.append(subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                                      timeout=120))

    threads = [threading.Thread(target=upgrade) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [(r.returncode, r.stdout.strip()) for r in results] == [(0, "0008")] * 4, [r.stderr[-800:] for r in
                                                                                        results]


def test_db_upgrade_and_current_from_the_cli(tmp_path, monkeypatch, capsys):
    from gpu_assist.cli import main

    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    assert main(["db", "current"]) == 0 and "schema at none, newest 0008" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0 and "schema at 0008 (newest)" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0 and main(["db", "current"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("schema at 0008, newest 0008")


def _first_revision_metadata() -> sqlalchemy.MetaData:
    """The tables as revision 0001 (and gpu-assist before the migrations) had them: no spend or card columns, no
    notices, no deliveries in the audit log, only the first states and kinds."""
    states = ("pending", "approved", "rejected", "expired", "launching", "running", "stopping", "stopped", "failed")
    old = sqlalchemy.MetaData()
    added = {"hourly_price", "launched_at", "stopped_at", "card_channel", "card_ts", "owner", "owned_until",
             "delivery"}

    def columns(table: sqlalchemy.Table) -> list[sqlalchemy.Column]:
        return [sqlalchemy.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable, index=c.index)
                for c in table.columns if c.name not in added]

    sqlalchemy.Table("requests", old, *columns(requests_table),
                     sqlalchemy.CheckConstraint("state IN (" + ", ".join(f"'{s}'" for s in states) + ")",
                                                name="request_state_known"),
                     sqlalchemy.CheckConstraint("kind IN ('launch', 'stop')", name="request_kind_known"))
    sqlalchemy.Table("audit_events", old, *columns(audit_table))
    return old


def test_upgrading_from_0001_fills_in_the_spend_of_earlier_launches(tmp_path):
    import datetime as dt
    import json

    from alembic import command
    from support import OLD_LAUNCH  # a launch's spec as gpu-assist stored it then

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'v1.db'}")
    with engine.begin() as connection:
        command.upgrade(schema._config(connection), "0001")
        connection.execute(sqlalchemy.text(
            "INSERT INTO requests (id, kind, requester, spec, currency, state, created_at, expires_at, instance_ids, "
            "version) VALUES ('r-000000000001', 'launch', 'slack:U1', :spec, 'USD', 'stopped', :t, :t, '[]', 3)"),
            {"spec": json.dumps({**OLD_LAUNCH, "hourly": "21.5", "instances": 2}), "t": "2026-12-01 09:00:00"})
        for hour, from_state, to_state in ((10, "launching", "running"), (15, "stopping", "stopped")):
            at = dt.datetime(2026, 12, 1, hour, tzinfo=dt.timezone.utc)
            connection.execute(audit_table.insert().values(at=at, request_id="r-000000000001", actor="x",
                                                           action="a", outcome="ok", from_state=from_state,
                                                           to_state=to_state, detail=""))
    assert schema.current(engine) == "0001"
    assert schema.upgrade(engine) == "0008"
    record = Store(engine=engine).get("r-000000000001")
    assert record.hourly_price == 43 and record.launched_at.hour == 10 and record.stopped_at.hour == 15


def test_upgrading_from_0002_keeps_the_requests_and_adds_cards_and_extensions(fresh_engine):
    from alembic import command

    insert = ("INSERT INTO requests (id, kind, requester, spec, currency, state, created_at, expires_at, "
              "instance_ids, version) VALUES (:id, :kind, 'slack:U1', '{}', 'USD', :state, :t, :t, '[]', 0)")
    row = {"t": _now()}
    with fresh_engine.begin() as connection:
        command.upgrade(schema._config(connection), "0002")
        connection.execute(sqlalchemy.text(insert), {**row, "id": "r-000000000001", "kind": "launch",
                                                     "state": "running"})
    with pytest.raises(sqlalchemy.exc.IntegrityError):  # 0002 knows no extensions
        with fresh_engine.begin() as connection:
            connection.execute(sqlalchemy.text(insert), {**row, "id": "r-000000000002", "kind": "extend",
                                                         "state": "pending"})
    assert schema.upgrade(fresh_engine) == "0008"
    with fresh_engine.begin() as connection:
        kept = connection.execute(sqlalchemy.text("SELECT id, state, card_channel, card_ts FROM requests")).all()
        connection.execute(sqlalchemy.text(insert), {**row, "id": "r-000000000002", "kind": "extend",
                                                     "state": "extended"})
    assert [tuple(r) for r in kept] == [("r-000000000001", "running", None, None)]
    Store(engine=fresh_engine).set_card("r-000000000001", "C-APPROVALS", "1700000000.000100")
    with fresh_engine.connect() as connection:
        assert connection.execute(sqlalchemy.text("SELECT card_channel, card_ts FROM requests WHERE id = "
                                                  "'r-000000000001'")).one() == ("C-APPROVALS", "1700000000.000100")
    with pytest.raises(RuntimeError, match="1 extension request"):  # requests are never deleted to go back
        with fresh_engine.begin() as connection:
            command.downgrade(schema._config(connection), "0002")
    assert schema.current(fresh_engine) == "0008"


def _now():
    import datetime as dt

    return dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)


def test_the_head_known_without_alembic_is_alembics_head():
    assert schema.HEAD_REVISION == schema.head()


def test_a_store_at_head_is_not_migrated_again_and_one_behind_is(tmp_path, monkeypatch):
    from alembic import command

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    schema.upgrade(engine)
    upgrades: list[str] = []
    real_upgrade = command.upgrade
    monkeypatch.setattr(command, "upgrade", lambda config, target: (upgrades.append(target),
                                                                    real_upgrade(config, target))[1])
    Store(engine=engine)
    assert upgrades == [] and schema.at_head(engine)
    with engine.begin() as connection:
        command.downgrade(schema._config(connection), "0006")
    assert not schema.at_head(engine)
    Store(engine=engine)
    assert upgrades == ["head"] and schema.current(engine) == schema.HEAD_REVISION
    engine.dispose()


def test_0008_admits_the_admitted_state_and_keeps_admitted_requests_from_going_below(fresh_engine):
    from alembic import command

    insert = ("INSERT INTO requests (id, kind, requester, spec, currency, state, created_at, expires_at, "
              "instance_ids, version) VALUES ('r-000000000001', 'launch', 'skypilot:carol', '{}', 'USD', "
              "'admitted', :t, :t, '[]', 0)")
    with fresh_engine.begin() as connection:
        command.upgrade(schema._config(connection), "0007")
    with pytest.raises(sqlalchemy.exc.IntegrityError):  # 0007 knows no admitted launches
        with fresh_engine.begin() as connection:
            connection.execute(sqlalchemy.text(insert), {"t": _now()})
    assert schema.upgrade(fresh_engine) == "0008"
    with fresh_engine.begin() as connection:
        connection.execute(sqlalchemy.text(insert), {"t": _now()})
    with pytest.raises(RuntimeError, match="1 admitted request"):
        with fresh_engine.begin() as connection:
            command.downgrade(schema._config(connection), "0007")
    assert schema.current(fresh_engine) == "0008"
