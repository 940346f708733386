-- Redeliveries asked for, per delivery. An attempt remembers the count it was claimed with, and its
-- recording ends the delivery only when no redelivery was asked for since: a redelivery asked for
-- after the receiver answered but before the attempt was recorded was marked DELIVERED with it, and
-- never sent.
ALTER TABLE "webhook_deliveries" ADD COLUMN "redeliveries" integer DEFAULT 0 NOT NULL;
