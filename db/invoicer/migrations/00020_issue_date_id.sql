-- +goose Up
-- The audit lists the documents issued on a day in id order, a page at a
-- time. With an index on issue_date alone the planner could only guess
-- whether to walk the primary key from the page's first id and filter on
-- the day (reading all history before it) or to read the whole day and
-- sort; its guess turned on the statistics of the moment. (issue_date, id)
-- answers an equality on the day in id order, reading a page's rows alone.
-- Every query the old index served, this one serves. It is built under the
-- table's lock: on a large table run this in a quiet moment.
CREATE INDEX fiscal_documents_issue_date_id ON invoicer.fiscal_documents (issue_date, id);
DROP INDEX invoicer.fiscal_documents_issue_date;

-- +goose Down
CREATE INDEX fiscal_documents_issue_date ON invoicer.fiscal_documents (issue_date);
DROP INDEX invoicer.fiscal_documents_issue_date_id;
