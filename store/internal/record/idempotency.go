package record

import (
	"fmt"
	"time"

	"github.com/avaagent/ava/store"
)

// CheckIdempotency validates an idempotency key to be recorded with what
// its request made (result, when k.Result is empty) and fills in its
// time.
func (c Checker) CheckIdempotency(k *store.Idempotency, result string) error {
	if err := CheckIdempotencyKey(k.Scope, k.Key); err != nil {
		return err
	}
	if k.Result == "" {
		k.Result = result
	}
	if k.Result == "" {
		return fmt.Errorf("idempotency key %q: the result it names is %w", k.Key, store.ErrEmpty)
	}
	k.CreatedAt = c.OrNow(k.CreatedAt).UTC()
	return nil
}

// CheckIdempotencyKey refuses an empty scope, or a key that is empty,
// longer than store.MaxIdempotencyKey or not printable ASCII.
func CheckIdempotencyKey(scope, key string) error {
	if scope == "" {
		return fmt.Errorf("idempotency scope is %w", store.ErrEmpty)
	}
	if key == "" {
		return fmt.Errorf("idempotency key is %w", store.ErrEmpty)
	}
	if len(key) > store.MaxIdempotencyKey {
		return fmt.Errorf("idempotency key is %d bytes long, more than %d", len(key), store.MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fmt.Errorf("idempotency key %q: byte %d is not printable ASCII", key, i)
		}
	}
	return nil
}

// IdempotencyCutoff is the creation time before which a key is
// forgotten, as of now.
func IdempotencyCutoff(now time.Time) int64 { return ToNS(now.Add(-store.IdempotencyTTL)) }

// KeyUsed is the error of a key that was recorded already.
func KeyUsed(k store.Idempotency) error {
	return fmt.Errorf("idempotency key %q (%s): %w", k.Key, k.Scope, store.ErrKeyUsed)
}

// IdempotencyColumns are the columns of idempotency_keys in the order
// ScanIdempotency reads them.
const IdempotencyColumns = "scope, key, request_hash, result, created_at"

// ScanIdempotency reads one idempotency_keys row.
func ScanIdempotency(row Scanner) (store.Idempotency, error) {
	var k store.Idempotency
	var created int64
	if err := row.Scan(&k.Scope, &k.Key, &k.RequestHash, &k.Result, &created); err != nil {
		return store.Idempotency{}, err
	}
	k.CreatedAt = FromNS(created)
	return k, nil
}

// CheckMessageKey checks the idempotency key a message carries, if any,
// on a copy (the caller's stays as it gave it), with the message's
// session key as its Result unless it names one.
func (c Checker) CheckMessageKey(m *store.Message) error {
	if m.Idempotency == nil {
		return nil
	}
	k := *m.Idempotency
	if err := c.CheckIdempotency(&k, m.SessionKey); err != nil {
		return err
	}
	m.Idempotency = &k
	return nil
}
