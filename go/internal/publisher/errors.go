package publisher

import "github.com/pubsub-go/pubsub-go/go/internal/rpc"

var errClosed = rpc.Closed("publisher is closed")
