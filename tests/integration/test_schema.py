"""The store's schema comes from the Alembic migrations: exactly the tables the code models, the state and kind
CHECKs, the append-only audit trigger, on SQLite and PostgreSQL; upgrading is idempotent and serialised."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import sqlalchemy
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from gpu_assist import schema
from gpu_assist.store import Store, audit_table, metadata, requests_table


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


def test_the_first_migration_makes_exactly_the_modelled_schema(fresh_engine):
    assert schema.current(fresh_engine) is None
    assert schema.upgrade(fresh_engine) == schema.head() == "0001"
    with fresh_engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
        inspector = sqlalchemy.inspect(connection)
        checks = {c["name"]: c["sqltext"] for c in inspector.get_check_constraints("requests")}
        indexes = {i["name"] for t in ("requests", "audit_events") for i in inspector.get_indexes(t)}
    assert differences == []
    assert set(checks) == {"request_state_known", "request_kind_known"} and "'stopping'" in checks[
        "request_state_known"]
    assert indexes == {"ix_requests_state", "ix_audit_events_request_id"}
    store = Store(engine=fresh_engine)
    with pytest.raises(sqlalchemy.exc.IntegrityError):  # the state CHECK holds
        with fresh_engine.begin() as connection:
            connection.execute(sqlalchemy.text(
                "INSERT INTO requests (id, kind, requester, spec, currency, state, created_at, expires_at, "
                "instance_ids, version) VALUES ('r-1', 'launch', 'x', '{}', 'USD', 'bogus', :t, :t, '[]', 0)"),
                {"t": "2026-12-03 00:00:00"})
    store.audit(None, "slack:U1", "submit launch", "refused", now=_now())
    for statement in ("UPDATE audit_events SET actor = 'someone else'", "DELETE FROM audit_events"):
        with pytest.raises(sqlalchemy.exc.DatabaseError, match="append-only"):
            with fresh_engine.begin() as connection:
                connection.execute(sqlalchemy.text(statement))
    assert schema.upgrade(fresh_engine) == "0001"  # idempotent
    assert [e.actor for e in store.audit_trail()] == ["slack:U1"]


def test_a_store_made_before_migrations_is_stamped_then_kept(tmp_path):
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    metadata.create_all(engine)  # how gpu-assist made its schema before the migrations
    with engine.begin() as connection:
        connection.execute(audit_table.insert().values(at=_now(), actor="U-OLD", action="submit", outcome="ok",
                                                       detail=""))
    assert schema.current(engine) is None
    assert schema.upgrade(engine) == "0001"
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
    code = ("import sys; from gpu_assist.store import Store; from gpu_assist import schema; "
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
    assert [(r.returncode, r.stdout.strip()) for r in results] == [(0, "0001")] * 4, [r.stderr[-800:] for r in
                                                                                        results]


def test_db_upgrade_and_current_from_the_cli(tmp_path, monkeypatch, capsys):
    from gpu_assist.cli import main

    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    assert main(["db", "current"]) == 0 and "schema at none, newest 0001" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0 and "schema at 0001 (newest)" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0 and main(["db", "current"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("schema at 0001, newest 0001")


def _now():
    import datetime as dt

    return dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
