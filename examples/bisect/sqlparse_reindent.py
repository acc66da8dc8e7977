"""sqlparse issue #562: reindenting drops the space in `from from_unixtime(...)`.

Reported against 0.3.1 ("works fine in 0.3.0"), fixed in 0.4.3.
"""

import sqlparse

SQL = (
    "SELECT extract(HOUR from from_unixtime(hour_ts) AT TIME ZONE 'America/Los_Angeles') from table"
)

out = sqlparse.format(SQL, reindent=True)
print(f"sqlparse {sqlparse.__version__}:\n{out}")
assert "fromfrom_unixtime" not in out, "space lost after reindent: " + out.splitlines()[1].strip()
