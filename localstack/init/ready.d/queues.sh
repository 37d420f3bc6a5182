#!/bin/bash
# LocalStack ready hook (docker compose): creates the onceflow queues, each with a
# dead-letter queue "<name>-dlq" that takes a message after 5 receives.
# The no-Docker stack gets the same queues from ../../fauxqs-init.json: change both together.
set -euo pipefail

for q in onceflow-billing onceflow-provider-events onceflow-notifications; do
  dlq_url=$(awslocal sqs create-queue --queue-name "$q-dlq" --query QueueUrl --output text)
  dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
    --attribute-names QueueArn --query Attributes.QueueArn --output text)
  policy="{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":\"5\"}"
  awslocal sqs create-queue --queue-name "$q" \
    --attributes "{\"RedrivePolicy\":\"${policy//\"/\\\"}\"}" >/dev/null
  echo "queue $q ready (DLQ $q-dlq, maxReceiveCount 5)"
done
