package fastcgi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Record types, roles and flags of the FastCGI 1.0 specification.
const (
	typeBeginRequest    = 1
	typeAbortRequest    = 2
	typeEndRequest      = 3
	typeParams          = 4
	typeStdin           = 5
	typeStdout          = 6
	typeStderr          = 7
	typeData            = 8
	typeGetValues       = 9
	typeGetValuesResult = 10
	typeUnknownType     = 11

	roleResponder = 1
	flagKeepConn  = 1

	version1   = 1
	headerLen  = 8
	maxContent = 65535
	// requestID is the id of every request: php-fpm does not multiplex
	// (FCGI_MPXS_CONNS = 0), so a connection carries one request at a time.
	requestID = 1
)

// Protocol statuses of FCGI_END_REQUEST.
const (
	statusRequestComplete = 0
	statusCantMpxConn     = 1
	statusOverloaded      = 2
	statusUnknownRole     = 3
)

// Errors returned by Client.Do and Response.Read (possibly wrapped).
var (
	// ErrClosed is returned by Do after Close.
	ErrClosed = errors.New("fastcgi: client closed")
	// ErrOverloaded means the application refused the request
	// (FCGI_OVERLOADED).
	ErrOverloaded = errors.New("fastcgi: application overloaded")
	// ErrProtocol means the application sent something the protocol does
	// not allow.
	ErrProtocol = errors.New("fastcgi: protocol error")
)

// header is a record header.
type header struct {
	typ           uint8
	id            uint16
	contentLength uint16
	paddingLength uint8
}

func putHeader(b []byte, typ uint8, contentLength int) {
	b[0] = version1
	b[1] = typ
	binary.BigEndian.PutUint16(b[2:], requestID)
	binary.BigEndian.PutUint16(b[4:], uint16(contentLength))
	b[6] = 0 // no padding
	b[7] = 0
}

func readHeader(r io.Reader, buf []byte) (header, error) {
	if _, err := io.ReadFull(r, buf[:headerLen]); err != nil {
		return header{}, err
	}
	if buf[0] != version1 {
		return header{}, fmt.Errorf("%w: record version %d", ErrProtocol, buf[0])
	}
	return header{
		typ:           buf[1],
		id:            binary.BigEndian.Uint16(buf[2:]),
		contentLength: binary.BigEndian.Uint16(buf[4:]),
		paddingLength: buf[6],
	}, nil
}

// appendRecords appends content as records of type typ (at most maxContent
// bytes each) to dst. Empty content appends nothing.
func appendRecords(dst []byte, typ uint8, content []byte) []byte {
	for len(content) > 0 {
		n := min(len(content), maxContent)
		var h [headerLen]byte
		putHeader(h[:], typ, n)
		dst = append(append(dst, h[:]...), content[:n]...)
		content = content[n:]
	}
	return dst
}

// appendEmpty appends the empty record that ends a stream of type typ.
func appendEmpty(dst []byte, typ uint8) []byte {
	var h [headerLen]byte
	putHeader(h[:], typ, 0)
	return append(dst, h[:]...)
}

// appendBeginRequest appends FCGI_BEGIN_REQUEST for the responder role.
func appendBeginRequest(dst []byte, keepConn bool) []byte {
	var b [headerLen + 8]byte
	putHeader(b[:], typeBeginRequest, 8)
	binary.BigEndian.PutUint16(b[headerLen:], roleResponder)
	if keepConn {
		b[headerLen+2] = flagKeepConn
	}
	return append(dst, b[:]...)
}

// appendLength appends a name-value pair length: one byte below 128, else
// four bytes with the high bit set.
func appendLength(dst []byte, n int) []byte {
	if n < 128 {
		return append(dst, byte(n))
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n)|1<<31)
}

// encodeParams encodes "NAME=value" strings as FastCGI name-value pairs.
// An entry without '=' is a name with an empty value.
func encodeParams(dst []byte, params []string) []byte {
	for _, kv := range params {
		k, v, _ := strings.Cut(kv, "=")
		dst = appendLength(dst, len(k))
		dst = appendLength(dst, len(v))
		dst = append(append(dst, k...), v...)
	}
	return dst
}
