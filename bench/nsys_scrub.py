"""Removes what a committed Nsight Systems SQLite export should not carry: the captured process's
environment, the capture machine's paths and names. Timing, kernel, NVTX and graph tables are untouched.

    python3 bench/nsys_scrub.py REPORT.sqlite...
"""
import re
import sqlite3
import sys

PATHS = re.compile(r"(/(?:work|tmp|root|home)/[^\s'\"]*)")


def scrub(path: str) -> None:
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    if "META_DATA_CAPTURE" in tables:
        db.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT_VARIABLE%' OR name LIKE '%WORKING_DIR%'")
    if "TARGET_INFO_SYSTEM_ENV" in tables:
        db.execute("DELETE FROM TARGET_INFO_SYSTEM_ENV WHERE name NOT IN ('OsName', 'OsVersion', 'CpuCores', 'CpuArchitecture')")
    if "StringIds" in tables:
        # A process's whole environment is one string, its variables NUL-separated: LIKE stops at the
        # first NUL, so these are found and emptied here, not by the pattern below.
        blocks = [(i, v) for i, v in db.execute("SELECT id, value FROM StringIds") if isinstance(v, str) and "\x00" in v and "=" in v]
        for string_id, _ in blocks:
            db.execute("UPDATE StringIds SET value = '<environment removed>' WHERE id = ?", (string_id,))
    for table in tables:
        cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")') if r[2] == "TEXT"]
        for col in cols:
            rows = db.execute(f'SELECT rowid, "{col}" FROM "{table}" WHERE "{col}" LIKE \'%/%\'').fetchall()
            for rowid, value in rows:
                cleaned = PATHS.sub(lambda m: "<path>/" + m.group(1).rsplit("/", 1)[-1], value)
                if cleaned != value:
                    db.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid = ?', (cleaned, rowid))
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    for p in sys.argv[1:]:
        scrub(p)
