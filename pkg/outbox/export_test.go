package outbox

// StatsSQL is ReadStats's query, for the plan test.
var StatsSQL = statsSQL
