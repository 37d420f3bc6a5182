package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Customer is a buyer's fiscal profile.
type Customer struct {
	ID         uuid.UUID // set by InsertCustomer
	DocType    string
	DocCountry string
	DocNumber  string
	LegalName  string
	Address    string
	City       string
	Department string
	Country    string
	Email      string
	CreatedAt  time.Time // set by InsertCustomer
}

// InsertCustomer records c under a new id and returns it as stored.
func (s *Store) InsertCustomer(ctx context.Context, c Customer) (Customer, error) {
	id, err := newID()
	if err != nil {
		return Customer{}, err
	}
	row, err := s.q.CustomerInsert(ctx, dbsqlc.CustomerInsertParams{ID: id,
		DocType: c.DocType, DocCountry: c.DocCountry, DocNumber: c.DocNumber, LegalName: c.LegalName,
		Address: c.Address, City: c.City, Department: c.Department, Country: c.Country, Email: c.Email,
	})
	if err != nil {
		return Customer{}, pg.Interpret(err, "insert customer")
	}
	return customerFromRow(row), nil
}

// Customer returns the customer with id, or an error of kind NotFound.
func (s *Store) Customer(ctx context.Context, id uuid.UUID) (Customer, error) {
	row, err := s.q.CustomerGet(ctx, id)
	if err != nil {
		return Customer{}, pg.Interpret(err, "customer %s", id)
	}
	return customerFromRow(row), nil
}

// Customers returns up to max customers created after (afterCreated,
// afterID), oldest first.
func (s *Store) Customers(ctx context.Context, afterCreated time.Time, afterID uuid.UUID, max int) ([]Customer, error) {
	rows, err := s.q.CustomerList(ctx, afterCreated, afterID, int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "list customers")
	}
	out := make([]Customer, len(rows))
	for i, r := range rows {
		out[i] = customerFromRow(r)
	}
	return out, nil
}

func customerFromRow(r dbsqlc.IngestCustomer) Customer {
	return Customer{ID: r.ID, DocType: r.DocType, DocCountry: r.DocCountry, DocNumber: r.DocNumber, LegalName: r.LegalName,
		Address: r.Address, City: r.City, Department: r.Department, Country: r.Country, Email: r.Email, CreatedAt: r.CreatedAt}
}
