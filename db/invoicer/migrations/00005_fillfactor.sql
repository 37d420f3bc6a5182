-- +goose Up
-- A document is updated three times on its way (claim, send marker, result),
-- and the first two touch no indexed column. Room left on each page lets
-- those be HOT updates: a new row version on the same page, with no entry in
-- any of the table's eight indexes. With full pages (the default) most of
-- them were not.
ALTER TABLE invoicer.fiscal_documents SET (fillfactor = 50);

-- +goose Down
ALTER TABLE invoicer.fiscal_documents RESET (fillfactor);
