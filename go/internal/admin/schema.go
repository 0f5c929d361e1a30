package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// TopicSchema is a topic's Pub/Sub schema as a query that decodes by it
// (schemaFrom=topic) starts with: the revision it reads into (pinned, else
// the newest the topic accepts) and every revision known now, so that
// executors fetch only revisions committed later.
type TopicSchema struct {
	Topic      string `json:"topic"`
	Schema     string `json:"schema"`   // projects/P/schemas/S
	Type       string `json:"type"`     // AVRO or PROTOCOL_BUFFER
	Encoding   string `json:"encoding"` // the topic's: BINARY or JSON
	RevisionID string `json:"revision_id"`
	Definition string `json:"definition"` // RevisionID's
	// Revisions are the definitions of the schema's revisions, by id.
	Revisions map[string]string `json:"revisions"`
}

// doTopicSchema runs get_topic_schema: the schema of Topic, or of the
// topic of Subscription; Revision pins the reader revision.
func doTopicSchema(ctx context.Context, r Request) ([]byte, error) {
	opts := r.Options.ClientOptions()
	topic := r.Topic
	if topic == "" {
		if err := need(r.Op, "subscription", r.Subscription); err != nil {
			return nil, err
		}
		c, err := pubsub.NewSubscriptionAdminClient(ctx, opts...)
		if err != nil {
			return nil, err
		}
		s, err := c.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: r.Subscription})
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("get subscription %s: %w", r.Subscription, err)
		}
		topic = s.Topic
	}
	tc, err := pubsub.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		return nil, err
	}
	t, err := tc.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: topic})
	tc.Close()
	if err != nil {
		return nil, fmt.Errorf("get topic %s: %w", topic, err)
	}
	ss := t.GetSchemaSettings()
	if ss == nil || ss.Schema == "" {
		return nil, rpc.Errorf(codes.FailedPrecondition, "topic %s has no schema (schema_settings); "+
			"schemaFrom=topic needs a topic created with a Pub/Sub schema", topic)
	}
	if ss.Schema == "_deleted-schema_" {
		return nil, rpc.Errorf(codes.FailedPrecondition, "the schema of topic %s was deleted", topic)
	}
	sc, err := pubsub.NewSchemaClient(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	out := TopicSchema{Topic: topic, Schema: ss.Schema, Encoding: ss.Encoding.String(), Revisions: map[string]string{}}
	it := sc.ListSchemaRevisions(ctx, &pubsubpb.ListSchemaRevisionsRequest{Name: ss.Schema, View: pubsubpb.SchemaView_FULL})
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list the revisions of schema %s: %w", ss.Schema, err)
		}
		out.Revisions[s.RevisionId] = s.Definition
		out.Type = s.Type.String()
	}
	want := r.Revision
	if want == "" {
		want = ss.LastRevisionId // the newest the topic accepts, when bounded
	}
	var s *pubsubpb.Schema
	if want != "" {
		s, err = sc.GetSchema(ctx, &pubsubpb.GetSchemaRequest{Name: ss.Schema + "@" + want, View: pubsubpb.SchemaView_FULL})
	} else {
		s, err = sc.GetSchema(ctx, &pubsubpb.GetSchemaRequest{Name: ss.Schema, View: pubsubpb.SchemaView_FULL})
	}
	if err != nil {
		if want != "" && rpc.Code(err) == codes.NotFound {
			return nil, rpc.Errorf(codes.NotFound, "schema %s has no revision %q (schemaRevision): %v", ss.Schema, want, err)
		}
		return nil, fmt.Errorf("get schema %s: %w", ss.Schema, err)
	}
	out.RevisionID, out.Definition, out.Type = s.RevisionId, s.Definition, s.Type.String()
	out.Revisions[s.RevisionId] = s.Definition
	return json.Marshal(out)
}

// SchemaRevision fetches one revision's definition (an executor meeting a
// revision committed after its query started).
func SchemaRevision(ctx context.Context, conn clientopt.Options, schema, revision string) (string, error) {
	if strings.ContainsAny(revision, "@/") || revision == "" {
		return "", fmt.Errorf("invalid schema revision id %q", revision)
	}
	sc, err := pubsub.NewSchemaClient(ctx, conn.ClientOptions()...)
	if err != nil {
		return "", err
	}
	defer sc.Close()
	s, err := sc.GetSchema(ctx, &pubsubpb.GetSchemaRequest{Name: schema + "@" + revision, View: pubsubpb.SchemaView_FULL})
	if err != nil {
		return "", fmt.Errorf("get schema %s@%s: %w", schema, revision, err)
	}
	return s.Definition, nil
}
