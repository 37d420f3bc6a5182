package outbox

// StatsSQL is ReadStats's query, for the plan test.
var StatsSQL = statsSQL

// PruneSQL is Prune's selection of ids, for the plan test.
var PruneSQL = pruneSQL
