"""Where results live: the SQLite store (db.py), results.json (resultsjson.py), the run folder's
layout (runfolder.py), run references (refs.py), and compare/merge (compare.py).
"""
