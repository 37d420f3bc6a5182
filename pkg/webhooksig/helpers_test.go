package webhooksig

import (
	"encoding/hex"
	"strconv"
)

func hexString(b []byte) string { return hex.EncodeToString(b) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
