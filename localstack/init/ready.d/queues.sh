#!/bin/bash
# LocalStack ready hook (docker compose): creates the onceflow queues, each with a
# dead-letter queue "<name>-dlq" that takes a message after max_receive receives.
# deploy/sqs/queues.yaml declares the real queues; deploy/queues_test.go checks this
# hook and the no-Docker stack's ../../fauxqs-init.json against it: change them together.
set -euo pipefail

queues="onceflow-billing onceflow-provider-events onceflow-notifications"
max_receive=5
visibility=30

for q in $queues; do
  dlq_url=$(awslocal sqs create-queue --queue-name "$q-dlq" --query QueueUrl --output text)
  dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
    --attribute-names QueueArn --query Attributes.QueueArn --output text)
  policy="{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":\"$max_receive\"}"
  awslocal sqs create-queue --queue-name "$q" \
    --attributes "{\"RedrivePolicy\":\"${policy//\"/\\\"}\",\"VisibilityTimeout\":\"$visibility\"}" >/dev/null
  echo "queue $q ready (DLQ $q-dlq, maxReceiveCount $max_receive, visibility ${visibility}s)"
done
