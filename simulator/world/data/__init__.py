"""Data sets kept in relational tables: the storage, loading, dumping and table-access helpers of domain authors.

- :mod:`~simulator.world.data.storage`: exact JSON numbers, free-form JSON columns, stored key order;
- :mod:`~simulator.world.data.loading`: reading a folder of ``{key: record}`` JSON files (or a tau2 ``db.json``),
  record checks naming file, key and field, bulk inserts;
- :mod:`~simulator.world.data.dumping`: tables back to nested JSON records;
- :mod:`~simulator.world.data.access`: tools' reads by key and writes through the trial's sqlite3 connection;
- :mod:`~simulator.world.data.documents`: one JSON document per row (tau2-style worlds), merging
  ``initialization_data``;
- :mod:`~simulator.world.data.merge`: the one deep merge of JSON values.

Domain authors import these names from :mod:`simulator.world.kit`.
"""
