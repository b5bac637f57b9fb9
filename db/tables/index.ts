import type { LearningTables } from './learning';
import type { PlatformTables } from './platform';
import type { WebhookTables } from './webhooks';

export type * from './platform';

/** The whole database as Kysely sees it: one interface per aggregate, merged here. */
export interface Database extends PlatformTables, LearningTables, WebhookTables {}
