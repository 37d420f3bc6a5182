-- +goose Up
-- reveals records each time an operator was shown a case's evidence
-- unmasked: who, which case, why and when; never the data. The reveal's
-- request writes it before it answers.
CREATE TABLE invoicer.reveals (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    actor       text NOT NULL,
    reason      text NOT NULL,
    revealed_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE invoicer.reveals;
