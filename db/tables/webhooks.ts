/** Tables of webhook endpoints and deliveries: filled by the webhook work. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface WebhookTables {}
